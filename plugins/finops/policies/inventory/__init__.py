"""Per-cloud inventory + metrics readers. Each returns plain `decide.Resource` / `decide.Series`."""
