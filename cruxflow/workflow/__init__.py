"""What the workflow's scripts need: job glue, config checks, GPU claims."""
