"""Memory baselines the papers compare against, behind the same MemoryMethod contract as AECG."""
