"""What the commands share: the source and output checks and tables (common), release diffs as text (difftext),
interval options and columns (intervals)."""
