"""The memory domain: the store in state.db (`store`) and the memory tools (`tools`)."""
