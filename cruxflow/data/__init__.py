"""The CRUX data model, its files and their readers (every input format), one error type."""
