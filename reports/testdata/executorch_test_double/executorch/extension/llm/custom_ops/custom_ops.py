"""TEST DOUBLE of the module that registers llama.custom_sdpa: registers nothing
(the stub pass in export_passes.py computes its rewrite in Python)."""
