"""Observing what a server answers: per-request observation, OpenTelemetry tracing, the request log line.

Also the logging filter that lets one of a run of identical log lines through per interval.
"""
