"""Views: terminal text, diagrams (DOT through Graphviz), charts (matplotlib), the HTML report,
JSON Schemas. Text is made here and nowhere below."""
