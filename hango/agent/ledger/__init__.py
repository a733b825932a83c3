"""The call ledger: the parts each call sent (``record``), why a prefix broke (``causes``), cache verdicts (``verdict``)."""
