"""The client's tests: the harness (`client_harness`) and the servers beside it serve the wings' tests too.

pytest puts the folder of a `conftest.py` on `sys.path` before it collects the folders below, so
`client/sessions/` imports `client_harness` as the tests here do.
"""
