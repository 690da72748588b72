"""Helper programs run as separate processes by the crash, race and concurrency tests."""
