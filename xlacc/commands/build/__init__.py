"""``xlacc build``: compile a project (or kernel files) into a verified shared object."""
