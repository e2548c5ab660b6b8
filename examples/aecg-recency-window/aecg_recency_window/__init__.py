"""aecg-recency-window: A recency-window memory method for aecg-bench, registered as memory=recency_window."""
