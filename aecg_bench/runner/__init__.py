"""Execute samples, write records, resume: from a config to a results directory."""
