"""The reports of a run: score table, JSON, HTML, shard merge, baselines and the regression gate
(docs/design.md, "Reports"); pure Python and numpy, read by the plugin and by ``python -m pytest_xai``.
"""
