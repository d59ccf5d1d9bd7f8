"""What OpenAIVideoClient shares between HELM's request threads (``helm-run -n N``), once per process.

HELM 0.5.16's executor sends a run's requests from a thread pool (``helm.common.general.parallel_map``, ``-n``
threads) through one ``AutoClient``, which builds a deployment's client on its first request and keeps it; it takes no
lock, so N threads that start together build up to N clients. Two things made those threads wait for each other
(measured with ``benchmarks/requests_in_flight.py``):

- each ``openai.OpenAI`` client builds its own ``httpx`` client (a TLS context read from the CA bundle, a
  connection pool), tens of milliseconds of CPU under the GIL each, N times at the start of a run;
  :func:`shared_openai_client` builds one per server, API key and retry/timeout setting, under a lock, and loads
  the SDK's chat-completions resources there once (``openai`` imports them on first use). The ``openai`` client is
  safe to share between threads (``httpcore``'s connection pool guards its state with a lock; HELM's own clients
  share theirs the same way), and its default pool (1,000 connections, 100 kept alive) does not limit ``-n`` up to
  100;
- HELM's :class:`~helm.common.cache.Cache` opens a new ``SqliteDict`` for every request: a new SQLite connection, a
  new worker thread (every statement then costs two thread switches, each waiting for the GIL while N threads
  build requests) and a table check on yet another connection; N threads answered at the same moment then
  contend for the file's lock and sleep in SQLite's busy handler (32 simultaneous misses: about 0.25 s before the
  last one is written). :class:`ProcessSqliteCache` is that cache over one plain ``sqlite3`` connection per cache
  file and process, used only by this package's client; it writes exactly HELM's rows (same table, keys and
  pickled values, so HELM and this cache read each other's entries).

:class:`ProcessSqliteCache` keeps HELM's semantics: a read, then ``compute()`` outside any lock, then a write
committed before the result is returned; other processes share the file through SQLite's own locking as before
(the connection holds no lock between statements). A cache file deleted or replaced while the process runs is
reopened (its device and inode are checked on every access). Any error of the shared connection falls back to
HELM's own per-request path for that request (and the connection is reopened next time), so failures surface
exactly as HELM's would.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import Any

import sqlitedict
from helm.common.cache import (
    Cache,
    CacheConfig,
    SqliteCacheConfig,
    cache_stats,
    create_key_value_store,
    write_to_key_value_store,
)
from helm.common.hierarchical_logger import hwarn
from helm.common.key_value_store import request_to_key

_CLIENTS_LOCK = threading.Lock()
_STORES_LOCK = threading.Lock()
_OPENAI_CLIENTS: dict[tuple[Any, ...], Any] = {}
_STORES: dict[tuple[int, str], _SharedStore] = {}
_TABLE = "unnamed"
"""SqliteDict's default table, the one HELM's ``SqliteKeyValueStore(path)`` uses."""
_JOURNAL_MODE = "DELETE"
"""SqliteDict's default journal mode (set on every connection it opens, as here)."""


def shared_openai_client(base_url: str, api_key: str, max_retries: int, timeout: float) -> Any:
    """The process's ``openai.OpenAI`` client for these settings (built on first use, then shared by every thread).

    Returns:
        An ``openai.OpenAI`` instance built as ``OpenAI(base_url=..., api_key=..., max_retries=..., timeout=...)``:
        the same requests, byte for byte, as a client of one's own.
    """
    key = (os.getpid(), base_url, api_key, max_retries, timeout)  # a forked child builds its own
    with _CLIENTS_LOCK:
        client = _OPENAI_CLIENTS.get(key)
        if client is None:
            from openai import OpenAI

            client = OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout)
            _ = client.chat.completions  # the SDK imports its resources on first use: here, once
            _OPENAI_CLIENTS[key] = client
    return client


class _SharedStore:
    """One SQLite connection per cache file and process, writing exactly what HELM's ``SqliteKeyValueStore`` writes.

    HELM's store is a ``SqliteDict(path)`` with its defaults: table ``unnamed`` (``key TEXT PRIMARY KEY, value
    BLOB``), keys HELM's :func:`~helm.common.key_value_store.request_to_key` (JSON, sorted keys), values
    ``sqlitedict.encode`` (pickle), journal mode DELETE, ``synchronous=OFF``, a commit after each write. The same
    statements run here on one plain ``sqlite3`` connection, in the calling thread under :attr:`lock` (``sqlite3``
    releases the GIL while SQLite works): no worker thread whose every statement needs two thread switches, which
    under -n threads cost more than the statements themselves.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return None
        return status.st_dev, status.st_ino

    def connection(self) -> sqlite3.Connection:
        """The open connection (reopened when the file was deleted or replaced); call with :attr:`lock` held."""
        identity = self._file_identity()
        if self._connection is None or identity is None or identity != self._identity:
            self.close()
            connection = sqlite3.connect(self.path, check_same_thread=False)  # SqliteDict's settings, as it opens
            connection.execute(f"PRAGMA journal_mode = {_JOURNAL_MODE}")
            connection.commit()
            connection.execute("PRAGMA synchronous=OFF")
            connection.execute(f'CREATE TABLE IF NOT EXISTS "{_TABLE}" (key TEXT PRIMARY KEY, value BLOB)')
            connection.commit()
            self._connection, self._identity = connection, self._file_identity()
        return self._connection

    def get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """HELM's ``SqliteKeyValueStore.get``."""
        text = request_to_key(key)
        with self.lock:
            rows = self.connection().execute(f'SELECT value FROM "{_TABLE}" WHERE key = ?', (text,)).fetchall()
        if not rows:
            return None
        value = sqlitedict.decode(rows[0][0])
        assert isinstance(value, dict)
        return value

    def put(self, key: Mapping[str, Any], value: Mapping[str, Any]) -> None:
        """HELM's ``SqliteKeyValueStore.put``: the row, then a commit."""
        row = (request_to_key(key), sqlitedict.encode(value))
        with self.lock:
            connection = self.connection()
            try:
                connection.execute(f'REPLACE INTO "{_TABLE}" (key, value) VALUES (?,?)', row)
                connection.commit()
            except BaseException:
                self.close()  # never leave a transaction open on the shared connection
                raise

    def close(self) -> None:
        """Close the connection (if open); call with :attr:`lock` held."""
        connection, self._connection, self._identity = self._connection, None, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 (a broken connection is dropped either way)
                pass


def _shared_store(path: str) -> _SharedStore:
    key = (os.getpid(), os.path.abspath(path))
    with _STORES_LOCK:
        shared = _STORES.get(key)
        if shared is None:
            shared = _STORES[key] = _SharedStore(path)
    return shared


def _close_all() -> None:
    for key, shared in list(_STORES.items()):
        if key[0] == os.getpid():
            with shared.lock:
                shared.close()


atexit.register(_close_all)


class ProcessSqliteCache(Cache):
    """HELM's SQLite request cache over one connection per file and process instead of one per request."""

    def __init__(self, config: SqliteCacheConfig) -> None:
        super().__init__(config)
        self._path = config.path

    def get(self, request: Mapping[str, Any], compute: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        """Get the result of ``request``, calling ``compute`` (outside any lock) on a miss; as HELM's ``Cache.get``."""
        shared = _shared_store(self._path)
        try:
            response = shared.get(request)
        except Exception as error:  # noqa: BLE001 (HELM's own path decides what this request gets)
            _drop(shared, "read", error)
            return super().get(request, compute)
        stats_key = self.config.cache_stats_key
        cache_stats.increment_query(stats_key)
        if response:
            return response, True
        cache_stats.increment_compute(stats_key)
        response = compute()
        try:
            shared.put(request, response)
        except Exception as error:  # noqa: BLE001
            _drop(shared, "write", error)
            with create_key_value_store(self.config) as store:  # HELM's own write, with its retries
                write_to_key_value_store(store, request, response)
        return response, False


def _drop(shared: _SharedStore, what: str, error: Exception) -> None:
    hwarn(f"request cache {shared.path}: the shared connection failed to {what} ({error}); "
          "this request uses HELM's own cache path, the connection is reopened")
    with shared.lock:
        shared.close()


def request_cache(cache_config: CacheConfig) -> Cache:
    """The cache a client of this package uses: :class:`ProcessSqliteCache` for SQLite, HELM's own otherwise."""
    if isinstance(cache_config, SqliteCacheConfig):
        return ProcessSqliteCache(cache_config)
    return Cache(cache_config)


__all__ = ["ProcessSqliteCache", "request_cache", "shared_openai_client"]
