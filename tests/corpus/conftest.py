"""The corpus is input for doctor, not tests: nothing below this folder is collected (its
``test_*.py`` files are other projects' tests, which import torch_xla and the like)."""

collect_ignore_glob = ["*"]
