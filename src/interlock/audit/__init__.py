"""The signed, hash-chained audit log: its records (:mod:`.records`), the key that signs them
(:mod:`.key`) and the check of a store's chains against its journal (:mod:`.verify`)."""

from .key import AuditKey, default_key_path, key_location, load_key
from .records import (
    GENESIS,
    AuditKind,
    AuditProblem,
    ChainStats,
    digest,
    make_record,
    record_hash,
    rehash,
    verify_chain,
)
from .verify import AuditHead, AuditReport, cross_check, export_head, verify_store

__all__ = [
    "GENESIS",
    "AuditHead",
    "AuditKey",
    "AuditKind",
    "AuditProblem",
    "AuditReport",
    "ChainStats",
    "cross_check",
    "default_key_path",
    "digest",
    "export_head",
    "key_location",
    "load_key",
    "make_record",
    "record_hash",
    "rehash",
    "verify_chain",
    "verify_store",
]
