"""NCCL's transports: predict them from a snapshot (or NCCL's own topology dump), read what a log
says NCCL did, and explain every difference. Rules as NCCL 2.30.7 writes them (:mod:`topomap.transport.rules`)."""

from __future__ import annotations
