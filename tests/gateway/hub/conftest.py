"""The hub's tests: the harness (`hub_harness`) and the upstream servers beside it serve the wings' tests too.

pytest puts the folder of a `conftest.py` on `sys.path` before it collects the folders below, so
`hub/forwarding/` imports `hub_harness` as the tests here do.
"""
