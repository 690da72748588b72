"""The demo's sample shop database: customers, orders and an e-mail outbox (SQLite).

The data is generated from a fixed seed, so every fresh demo database has the same rows and the
scripted model's requests (e.g. "delete the cancelled orders from before 2024") always match
something. Dates are fixed, not relative to today.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

SCHEMA = """
CREATE TABLE customers (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL UNIQUE,
    country      TEXT NOT NULL,
    tier         TEXT NOT NULL CHECK (tier IN ('standard', 'gold')),
    credit_cents INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL
);
CREATE TABLE orders (
    id          INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id),
    status      TEXT NOT NULL
                CHECK (status IN ('pending', 'shipped', 'delivered', 'cancelled', 'refunded')),
    total_cents INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    shipped_at  TEXT
);
CREATE INDEX orders_status ON orders (status, created_at);
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    to_addr         TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    idempotency_key TEXT UNIQUE
);
"""

FIRST = ["Ava", "Ben", "Chloe", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
         "Keira", "Liam", "Maya", "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Sami", "Tara",
         "Umar", "Vera", "Wei", "Ximena", "Yusuf", "Zoe"]
LAST = ["Adler", "Brooks", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Huang",
        "Ivanova", "Jensen", "Kowalski", "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov",
        "Rossi", "Schmidt", "Tanaka", "Usman", "Varga", "Weber", "Yilmaz", "Zhang"]
COUNTRIES = ["DE", "FR", "GB", "US", "ES", "IT", "NL", "JP", "CN", "SE"]

CUSTOMERS = 120
ORDERS = 400
FIRST_ORDER_ID = 1001

COMPLAINING_CUSTOMER_ID = 17
COMPLAINING_CUSTOMER = "Dana Whitfield"
LATE_ORDER_ID = 1042
RETENTION_CUTOFF = "2024-01-01"
"""Cancelled orders created before this date are past the retention period in the demo."""


def create_sample_db(path: str | Path) -> Path:
    """Create a fresh sample database at ``path`` (an existing file is replaced)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    rng = random.Random(20240611)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SCHEMA)
        start = datetime(2022, 6, 1, 9, 0)
        customers = []
        used: set[str] = set()
        for cid in range(1, CUSTOMERS + 1):
            if cid == COMPLAINING_CUSTOMER_ID:
                name = COMPLAINING_CUSTOMER
            else:
                while True:
                    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
                    if name not in used:
                        break
            used.add(name)
            email = name.lower().replace(" ", ".") + "@example.com"
            created = start + timedelta(days=rng.randint(0, 500), minutes=rng.randint(0, 1440))
            customers.append((cid, name, email, rng.choice(COUNTRIES),
                              "gold" if rng.random() < 0.15 else "standard",
                              rng.choice([0, 0, 0, 500, 1000]), created.isoformat(" ")))
        conn.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?)", customers)
        orders = []
        for n in range(ORDERS):
            oid = FIRST_ORDER_ID + n
            created = datetime(2023, 1, 3, 8, 0) + timedelta(
                days=rng.randint(0, 880), minutes=rng.randint(0, 1440))
            status = rng.choices(["delivered", "shipped", "pending", "cancelled", "refunded"],
                                 weights=[55, 10, 8, 20, 7])[0]
            shipped = (created + timedelta(days=rng.randint(1, 4))).isoformat(" ") \
                if status in ("shipped", "delivered", "refunded") else None
            customer = rng.randint(1, CUSTOMERS)
            if oid == LATE_ORDER_ID:
                status, customer = "shipped", 42
                created = datetime(2025, 5, 2, 14, 30)
                shipped = datetime(2025, 5, 3, 10, 0).isoformat(" ")
            orders.append((oid, customer, status, rng.randint(900, 45000),
                           created.isoformat(" "), shipped))
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", orders)
        conn.commit()
    finally:
        conn.close()
    return path
