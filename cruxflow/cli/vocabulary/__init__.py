"""The command line's one vocabulary: every flag of every ``cruxflow`` command, declared once
(:class:`Flag`), with its one meaning, its grammar and its default (or the one place that holds
it). The commands build their parsers from it with :func:`add` and :func:`command`.

Old spellings (:data:`RENAMED`) stay accepted where the old name means nothing else now: they
are hidden, and using one prints one deprecation line. Where the old name means something else
now (``--alpha``, once an error level, is alpha-nDCG's penalty), it is refused with one line
naming the new flag. tests/test_cli_vocabulary.py reads every command's parser and fails when a
flag does not come from here, when a flag or command has no help, when a shown default is not
the parser's, or when the workflow's config calls the same option by another name.

A flag derived from another home of options (a format's, a measure's) is declared through
:func:`register` too, which refuses a name that is taken.

The parts: how a flag is declared and added (:mod:`.flags`), every flag declared
(:mod:`.declared`), the renamed flags and how a parser reads them (:mod:`.renamed`). Kept light:
the CLI imports this package to build any command's parser.
"""

from cruxflow.cli.vocabulary.declared import (
    INGEST_HOME,
    NO_TEST,
    PAIRED_HOME,
    SHARED_OPTIONS,
    add_paired_options,
    option_default_text,
    option_flag,
    option_help,
    paired_policy,
)
from cruxflow.cli.vocabulary.flags import (
    DEFAULT_RE,
    VOCABULARY,
    Flag,
    add,
    command,
    flag_of,
    register,
    show,
)
from cruxflow.cli.vocabulary.renamed import (
    RENAMED,
    Refused,
    Renamed,
    add_old_spellings,
    is_refused,
)

__all__ = ["DEFAULT_RE", "INGEST_HOME", "NO_TEST", "PAIRED_HOME", "RENAMED", "SHARED_OPTIONS",
           "VOCABULARY", "Flag", "Refused", "Renamed", "add", "add_old_spellings",
           "add_paired_options", "command", "flag_of", "is_refused", "option_default_text",
           "option_flag", "option_help", "paired_policy", "register", "show"]
