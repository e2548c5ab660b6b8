"""Multi-agent framework adapters (single, AutoGen, MacNet, AgentNet) behind one contract."""
