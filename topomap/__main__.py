"""`python -m topomap`: Ctrl-C while the entry point itself loads is exit 130, not a traceback."""

try:
    from topomap.cli import main
except KeyboardInterrupt:
    raise SystemExit(130) from None

main()
