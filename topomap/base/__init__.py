"""Units and their text, link rates, path classes, PCI addresses, CPU sets, device ids, errors.

Imports nothing of topomap."""
