"""Per-cloud actions (mark, unmark, stop / deallocate / terminate). Each honours `dry_run`."""
