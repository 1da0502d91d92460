"""The rules doctor runs: over error text, sources, shared libraries, the environment, a command."""
