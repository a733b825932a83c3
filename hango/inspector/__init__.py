"""The context inspector: what the next call sends, part by part, and what changing it would do.

Everything here builds on the runtime's seam (``hango.agent.assembly``, the value
types, the estimator, validation, compaction and the ledger's records); the
runtime imports nothing from this package.
"""
