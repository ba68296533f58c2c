"""Blobs in an S3 bucket through boto3: AWS S3 or any S3-compatible server (MinIO, Ceph, moto).

URL: ``s3://BUCKET[/PREFIX][?endpoint_url=URL&region=NAME&presign=SECONDS]``. Credentials come
from boto3's own chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a profile, an instance
role); the endpoint, when not in the URL, from ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``.

Why one PUT is enough for an atomic ``put``: S3 makes an object visible only when its PUT has
completed and never shows part of one, and reads after a successful write see it (strong
read-after-write consistency), so there is no temporary key to copy from. The PUT is conditional
(``If-None-Match: *``): an object, once stored, is never replaced. It carries the SHA-256 of the
bytes (``ChecksumSHA256``), so S3 refuses a body damaged on the way (moto does not check it).
Keys are content addresses, so two workers storing the same key store the same bytes.

Serving: without ``presign`` the app streams objects itself (``locate`` answers None and
:meth:`S3Storage.open` gives a seekable reader, read with ranged GETs); with ``presign=SECONDS``
file downloads are redirected to presigned GET URLs that the clients fetch from S3 directly.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from hub_server.errors import BlobMissing, StorageError
from hub_server.storage.base import BLOB_PREFIX, Storage, StoredBlob, check_key
from hub_server.storage.staging import StagingArea

_MISSING = {"404", "NoSuchKey", "NotFound"}
_SINGLE_PUT_LIMIT = 5 * 1024**3  # S3's largest single PUT; beyond it boto3's multipart upload is used
_POOL = 64  # HTTP connections per app worker: sized for the ASGI thread pool serving downloads
_OPTIONS = {"endpoint_url", "region", "presign"}


@functools.cache
def _session() -> boto3.session.Session:
    # Only a cache of botocore's parsed service models (a third of a second to load per session);
    # clients made from it keep their own settings, and an app makes its one client at start.
    return boto3.session.Session()


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _missing(error: ClientError) -> bool:
    return _code(error) in _MISSING


def _sha256_b64(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return base64.b64encode(digest.digest()).decode()


class S3Storage(Storage):
    """Blobs under ``prefix`` in ``bucket``; files being received are staged in a local folder first."""

    def __init__(self, bucket: str, prefix: str = "", *, staging: Path, endpoint_url: str | None = None,
                 region: str | None = None, presign_seconds: int | None = None, client: Any = None) -> None:
        self.bucket = bucket
        self.prefix = check_key(prefix.strip("/")) + "/" if prefix.strip("/") else ""
        self.presign_seconds = presign_seconds
        self._area = StagingArea(staging)  # this process's folder; what dead ones left is swept now
        self._staging = self._area.path
        config = Config(max_pool_connections=_POOL, retries={"mode": "standard", "max_attempts": 5},
                        signature_version="s3v4")
        self.client = client or _session().client(
            "s3", endpoint_url=endpoint_url, region_name=region or "us-east-1", config=config)

    @classmethod
    def from_url(cls, url: str, staging: Path) -> S3Storage:
        """Build the backend an ``s3://`` URL describes (see the module docstring)."""
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise StorageError(f"invalid S3 storage URL {url!r}: expected s3://BUCKET[/PREFIX]")
        options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        unknown = set(options) - _OPTIONS
        if unknown:
            raise StorageError(f"unknown S3 storage option(s) {sorted(unknown)}; known: {sorted(_OPTIONS)}")
        presign = options.get("presign")
        if presign is not None and not (presign.isdigit() and int(presign) > 0):
            raise StorageError(f"presign must be a positive number of seconds, not {presign!r}")
        return cls(parts.netloc, parts.path, staging=staging, endpoint_url=options.get("endpoint_url"),
                   region=options.get("region"), presign_seconds=int(presign) if presign else None)

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def staging_dir(self) -> Path:
        return self._staging

    def put(self, key: str, source: Path) -> None:
        try:
            if source.stat().st_size > _SINGLE_PUT_LIMIT:
                # Multipart: still all-or-nothing, the object appears when the upload completes.
                if not self.exists(key):
                    self.client.upload_file(str(source), self.bucket, self._key(key))
                return
            try:
                self._put_object(key, source, only_if_new=True)
            except ClientError as error:
                if _code(error) == "PreconditionFailed":
                    self._renew(key)  # stored before: a content address, so the same bytes
                    return
                if _code(error) != "ConditionalRequestConflict":
                    raise
                # Another worker is storing the same key now; ours must be durable before we return.
                self._put_object(key, source, only_if_new=False)
        except (ClientError, BotoCoreError, OSError) as error:
            raise StorageError(f"could not store blob {key} in s3://{self.bucket}: {error}") from error
        finally:
            source.unlink(missing_ok=True)

    def replace(self, key: str, source: Path) -> None:
        # An unconditional PUT: S3 swaps the whole object at once (readers see the old or the new bytes).
        try:
            if source.stat().st_size > _SINGLE_PUT_LIMIT:
                self.client.upload_file(str(source), self.bucket, self._key(key))
            else:
                self._put_object(key, source, only_if_new=False)
        except (ClientError, BotoCoreError, OSError) as error:
            raise StorageError(f"could not store blob {key} in s3://{self.bucket}: {error}") from error
        finally:
            source.unlink(missing_ok=True)

    def _put_object(self, key: str, source: Path, *, only_if_new: bool) -> None:
        extra = {"IfNoneMatch": "*"} if only_if_new else {}
        with open(source, "rb") as body:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=body,
                                   ChecksumSHA256=_sha256_b64(source), **extra)

    def open(self, key: str) -> BinaryIO:
        """A seekable, buffered reader of the object; each read after a seek is one ranged GET."""
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as error:
            if _missing(error):
                raise BlobMissing(f"blob {key} is missing") from None
            raise StorageError(f"could not read blob {key}: {error}") from error
        except BotoCoreError as error:
            raise StorageError(f"could not read blob {key}: {error}") from error
        raw = _ObjectReader(self.client, self.bucket, self._key(key), int(head["ContentLength"]))
        return io.BufferedReader(raw, buffer_size=256 * 1024)

    def exists(self, key: str) -> bool:
        return self.stored_at(key) is not None

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except (ClientError, BotoCoreError) as error:
            raise StorageError(f"could not delete blob {key}: {error}") from error

    def _renew(self, key: str) -> None:
        """Give a stored object a new LastModified (see ``Storage.put``): a copy onto itself."""
        full = self._key(key)
        self.client.copy_object(Bucket=self.bucket, Key=full, CopySource={"Bucket": self.bucket, "Key": full},
                                MetadataDirective="REPLACE")

    def blobs(self) -> Iterator[StoredBlob]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix + BLOB_PREFIX)
        try:
            for page in pages:
                for item in page.get("Contents", []):
                    yield StoredBlob(item["Key"].removeprefix(self.prefix), int(item["Size"]),
                                     item["LastModified"].timestamp())
        except (ClientError, BotoCoreError) as error:
            raise StorageError(f"could not list blobs in s3://{self.bucket}: {error}") from error

    def stored_at(self, key: str) -> float | None:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as error:
            if _missing(error):
                return None
            raise StorageError(f"could not check blob {key}: {error}") from error
        except BotoCoreError as error:
            raise StorageError(f"could not check blob {key}: {error}") from error
        return float(head["LastModified"].timestamp())

    def locate(self, key: str) -> str | None:
        if self.presign_seconds is None:
            return None
        return str(self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": self._key(key)}, ExpiresIn=self.presign_seconds))


class _ObjectReader(io.RawIOBase):
    """Reads one S3 object from the current position with a ranged GET, kept open while reads follow on."""

    def __init__(self, client: Any, bucket: str, key: str, size: int) -> None:
        self._client, self._bucket, self._key, self.size = client, bucket, key, size
        self._pos = 0
        self._body: Any = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        position = max(0, base + offset)
        if position != self._pos:
            self._drop_body()
            self._pos = position
        return self._pos

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self.size:
            return 0
        if self._body is None:
            try:
                reply = self._client.get_object(Bucket=self._bucket, Key=self._key, Range=f"bytes={self._pos}-")
            except (ClientError, BotoCoreError) as error:
                raise StorageError(f"could not read s3://{self._bucket}/{self._key}: {error}") from error
            self._body = reply["Body"]
        data = self._body.read(len(buffer))
        if not data:
            raise StorageError(f"s3://{self._bucket}/{self._key} ended early at byte {self._pos} of {self.size}")
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def _drop_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None

    def close(self) -> None:
        self._drop_body()
        super().close()


def default_staging() -> Path:
    """A local staging folder for backends that need one and were given none."""
    return Path(tempfile.gettempdir()) / "vf-hub-staging"
