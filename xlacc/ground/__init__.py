"""The ground floor, which every other layer may use and which uses none of them: errors, the
catalogue of finding codes, the report every command renders, paths (every write checked),
running processes, locating the toolchain, and where xlacc's own files are."""
