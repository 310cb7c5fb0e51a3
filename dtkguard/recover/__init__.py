"""Recovery: the transaction journal, the vault of vendor wheels, restore and undo."""
