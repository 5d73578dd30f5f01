"""Commitments (Savings Plans, reserved instances, CUDs, Azure reservations) read back from
`focus_costs`: coverage and utilisation (`usage`), instance families (`family`), and the
warehouse edge that feeds them (`query`). See docs/commitments.md for the definitions."""
