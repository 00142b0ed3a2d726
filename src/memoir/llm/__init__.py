"""The one model interface: values, errors, providers, token counting, usage ledger."""
