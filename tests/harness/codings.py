# SPDX-License-Identifier: MIT
"""Content codings for the scenarios: gzip through Python's own zlib, brotli
and zstd through the system's libbrotlienc, libbrotlidec and libzstd (the
libraries Corral is built with) by ctypes, one whole body at a time.

    encode("br", b"...") -> bytes; decode("zstd", data) -> bytes
"""

import ctypes
import ctypes.util
import gzip

DECODED_MAX = 64 << 20	# the most a test body decodes to
BROTLI_QUALITY = 5
BROTLI_LGWIN = 22
BROTLI_MODE_GENERIC = 0
BROTLI_DECODER_RESULT_SUCCESS = 1
ZSTD_LEVEL = 3
ZSTD_CONTENTSIZE_UNKNOWN = (1 << 64) - 1
ZSTD_CONTENTSIZE_ERROR = (1 << 64) - 2

CODINGS = ("gzip", "br", "zstd")


def _lib(name):
    path = ctypes.util.find_library(name)
    if path is None:
        raise AssertionError(f"lib{name} not found: scripts/install-deps installs it")
    return ctypes.CDLL(path)


_libs = {}


def _brotlienc():
    if "enc" not in _libs:
        lib = _lib("brotlienc")
        lib.BrotliEncoderMaxCompressedSize.restype = ctypes.c_size_t
        lib.BrotliEncoderMaxCompressedSize.argtypes = [ctypes.c_size_t]
        lib.BrotliEncoderCompress.restype = ctypes.c_int
        lib.BrotliEncoderCompress.argtypes = [
            ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p]
        _libs["enc"] = lib
    return _libs["enc"]


def _brotlidec():
    if "dec" not in _libs:
        lib = _lib("brotlidec")
        lib.BrotliDecoderDecompress.restype = ctypes.c_int
        lib.BrotliDecoderDecompress.argtypes = [
            ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
            ctypes.c_char_p]
        _libs["dec"] = lib
    return _libs["dec"]


def _zstd():
    if "zstd" not in _libs:
        lib = _lib("zstd")
        for fn in ("ZSTD_compressBound",):
            getattr(lib, fn).restype = ctypes.c_size_t
            getattr(lib, fn).argtypes = [ctypes.c_size_t]
        lib.ZSTD_compress.restype = ctypes.c_size_t
        lib.ZSTD_compress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                      ctypes.c_size_t, ctypes.c_int]
        lib.ZSTD_decompress.restype = ctypes.c_size_t
        lib.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.c_char_p, ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
        lib.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        _libs["zstd"] = lib
    return _libs["zstd"]


def encode(coding, data):
    """data as one gzip member, brotli stream or zstd frame."""
    if coding == "gzip":
        return gzip.compress(data, mtime=0)
    if coding == "br":
        lib = _brotlienc()
        cap = ctypes.c_size_t(lib.BrotliEncoderMaxCompressedSize(len(data)) or len(data) + 64)
        out = ctypes.create_string_buffer(cap.value)
        if not lib.BrotliEncoderCompress(BROTLI_QUALITY, BROTLI_LGWIN, BROTLI_MODE_GENERIC,
                                         len(data), data, ctypes.byref(cap), out):
            raise AssertionError("brotli: cannot encode")
        return out.raw[:cap.value]
    if coding == "zstd":
        lib = _zstd()
        cap = lib.ZSTD_compressBound(len(data))
        out = ctypes.create_string_buffer(cap)
        n = lib.ZSTD_compress(out, cap, data, len(data), ZSTD_LEVEL)
        if lib.ZSTD_isError(n):
            raise AssertionError("zstd: cannot encode")
        return out.raw[:n]
    if coding in (None, "identity"):
        return data
    raise ValueError(f"no such coding: {coding}")


def decode(coding, data):
    """The bytes data decodes to; AssertionError if it does not."""
    if coding in (None, "identity"):
        return data
    if coding == "gzip":
        return gzip.decompress(data)
    if coding == "br":
        cap = ctypes.c_size_t(DECODED_MAX)
        out = ctypes.create_string_buffer(DECODED_MAX)
        if _brotlidec().BrotliDecoderDecompress(len(data), data, ctypes.byref(cap), out) \
                != BROTLI_DECODER_RESULT_SUCCESS:
            raise AssertionError("brotli: does not decode")
        return out.raw[:cap.value]
    if coding == "zstd":
        lib = _zstd()
        size = lib.ZSTD_getFrameContentSize(data, len(data))
        if size in (ZSTD_CONTENTSIZE_UNKNOWN, ZSTD_CONTENTSIZE_ERROR) or size > DECODED_MAX:
            size = DECODED_MAX
        out = ctypes.create_string_buffer(max(size, 1))
        n = lib.ZSTD_decompress(out, max(size, 1), data, len(data))
        if lib.ZSTD_isError(n):
            raise AssertionError("zstd: does not decode")
        return out.raw[:n]
    raise ValueError(f"no such coding: {coding}")
