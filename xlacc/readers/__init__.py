"""Readers: what a file says, without compiling, importing or running it. Shared libraries (ELF
tables, exports, the fatbin's GPU code), C/C++/CUDA and Python sources, HLO and StableHLO text."""
