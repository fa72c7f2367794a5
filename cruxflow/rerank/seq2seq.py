"""What the T5-family rerankers (monoT5, Setwise Flan-T5) share: loading a local seq2seq model,
looking up single-token answers, and cutting text to a number of tokens."""

from __future__ import annotations

from cruxflow._extras import require
from cruxflow.weights import resolve_model

require(__name__, "rerank", "torch", "transformers")

DTYPES = ("float32", "bfloat16", "float16")


def load_seq2seq(model: str, *, device: str, dtype: str):
    """``(tokenizer, model)`` of a local encoder-decoder, in eval mode on ``device``.

    ``model`` is a path, an id in the local Hugging Face cache or a ``package:`` spec; nothing is
    downloaded. T5 in float16 is known to overflow; bfloat16 is the safe half precision.
    """
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {DTYPES}")
    path = resolve_model(model)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    net = AutoModelForSeq2SeqLM.from_pretrained(path, local_files_only=True,
                                                dtype=getattr(torch, dtype))
    return tokenizer, net.to(device).eval()


def single_token_id(tokenizer, word: str) -> int:
    """The id of ``word`` as the tokenizer writes it after a space (T5: ``"▁true"``); an error
    if the vocabulary splits it, since a one-step score cannot cover several tokens."""
    ids = tokenizer.encode(word, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ValueError(f"{word!r} is not a single token of this tokenizer: {pieces}")
    return ids[0]


def truncate_tokens(tokenizer, text: str, n_tokens: int) -> str:
    """The longest prefix of ``text`` that covers its first ``n_tokens`` tokens.

    Cutting the original string at a token's end offset keeps the text as written (decoding
    tokens back would turn out-of-vocabulary characters into ``<unk>``).
    """
    if n_tokens <= 0:
        return ""
    offsets = tokenizer(text, add_special_tokens=False,
                        return_offsets_mapping=True)["offset_mapping"]
    if len(offsets) <= n_tokens:
        return text
    return text[:offsets[n_tokens - 1][1]]
