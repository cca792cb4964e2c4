"""The one ABI bridge between ExecuTorch 1.5.1's QNN adaptor and newer libQnnHtp releases (test-only).

``PyQnnManagerAdaptor`` in the executorch 1.5.1 wheel was compiled against the QAIRT 2.37
headers. One struct it hands to ``QnnDevice_create`` changed layout since then,
``QnnHtpDevice_CustomConfig_t`` (the HTP device's custom config, e.g. the SoC model)::

    adaptor's headers (2.37)              newer headers (QNN 2.51, HTP API 5.51)
    struct {                              struct {
      uint32 option;        // offset 0     uint32 option;        // offset 0
      union {               // offset 4     /* 4 bytes padding */
        uint32 socModel;                    union {               // offset 8
        struct {uint32 a, b} arch; ...        uint32 socModel; ...; void* ptr;
      };                    // 12 bytes     };                    // 16 bytes, 8-aligned
    }                                     }

(the new union gained a pointer member, which moved it to offset 8). Fed the old layout,
libQnnHtp 2.51 reads ``socModel`` from bytes 8..12 and rejects the device ("unknown custom
config socModel 0", error 14001). Everything else the adaptor passes lines up.

:func:`install` bridges it at run time: it loads the root's ``libQnnHtp.so`` (ExecuTorch's
later ``dlopen`` gets the same copy), asks ``QnnInterface_getProviders`` for the interface and
replaces entry 40 of its function table, ``deviceCreate`` (the order of
``QNN_INTERFACE_VER_TYPE`` in QnnInterface.h), with a wrapper that re-lays each custom
device config ``{option, p0, p1}`` as ``{option, pad, p0, p1}``. It does so only when the
loaded library's HTP API is newer than the adaptor's headers; with a real QAIRT 2.37 SDK
nothing is replaced. This module is the only place the bridge exists; product code never
imports it.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# HTP API of the headers ExecuTorch 1.5.1's adaptor was built with (QAIRT 2.37). The exact
# release that moved the union is not known here; every newer HTP API is treated as moved, and
# the one measured (5.51, QNN 2.51) needs the bridge.
ADAPTOR_HTP_API = (5, 37)
DEVICE_CREATE_SLOT = 40  # index of deviceCreate in QNN_INTERFACE_VER_TYPE
QNN_DEVICE_CONFIG_OPTION_CUSTOM = 0
_PROT_READ_WRITE = 0x1 | 0x2


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]


class _Interface(ctypes.Structure):
    """QnnInterface_t up to the start of its function table."""

    _fields_ = [
        ("backend_id", ctypes.c_uint32),
        ("provider_name", ctypes.c_char_p),
        ("core_api", _Version),
        ("backend_api", _Version),
    ]


# Qnn_ErrorHandle_t QnnDevice_create(Qnn_LogHandle_t, const QnnDevice_Config_t**, Qnn_DeviceHandle_t*)
_DEVICE_CREATE = ctypes.CFUNCTYPE(
    ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)


@dataclass
class AbiState:
    """What :func:`install` found and did (kept alive for the life of the process)."""

    library: Path
    core_api: tuple[int, int, int]
    htp_api: tuple[int, int, int]
    bridged: bool
    _keep: list[Any]
    _calls: list[int]

    def unbridge(self) -> None:
        """Put the library's own deviceCreate back (for a control in a child process only)."""
        if self.bridged:
            slot, original = self._keep[2], self._keep[3]
            ctypes.c_void_p.from_address(slot).value = ctypes.cast(original, ctypes.c_void_p).value
            self.bridged = False

    @property
    def calls(self) -> int:
        """deviceCreate calls that went through the bridge (0 when not bridged)."""
        return self._calls[0]


_STATE: AbiState | None = None


def needs_bridge(htp_api: tuple[int, ...]) -> bool:
    """Whether a libQnnHtp reporting ``htp_api`` expects the newer custom-config layout."""
    return tuple(htp_api[:2]) > ADAPTOR_HTP_API


def _quiet_stdout_load(path: Path) -> ctypes.CDLL:
    # libQnnHtp prints a "# LIBNATIVE: ..." line on C stdout when it loads; keep stdout clean.
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    finally:
        ctypes.CDLL(None).fflush(None)  # the line sits in C's stdout buffer until flushed
        os.dup2(saved, 1)
        os.close(saved)


def _relay_custom(config: int, keep: list[Any]) -> int:
    """A QnnDevice_Config_t whose custom payload is re-laid from the adaptor's layout."""
    custom = ctypes.c_void_p.from_address(config + 8).value
    if not custom:
        return config
    option, p0, p1 = (ctypes.c_uint32 * 3).from_address(custom)
    relaid = (ctypes.c_uint32 * 4)(option, 0, p0, p1)
    outer = (ctypes.c_uint8 * 16)()
    ctypes.memmove(outer, config, 8)
    ctypes.c_void_p.from_address(ctypes.addressof(outer) + 8).value = ctypes.addressof(relaid)
    keep += [relaid, outer]
    return ctypes.addressof(outer)


def install(sdk_root: Path) -> AbiState:
    """Load ``sdk_root``'s libQnnHtp and bridge deviceCreate if its HTP API needs it (idempotent).

    Import torch before calling: its libstdc++ must be loaded before the QNN libraries' libc++.
    """
    global _STATE
    if _STATE is not None:
        return _STATE
    import torch  # noqa: F401  (load order, see above)
    from executorch.backends.qualcomm.python import PyQnnManagerAdaptor  # noqa: F401

    path = sdk_root / "lib" / "x86_64-linux-clang" / "libQnnHtp.so"
    lib = _quiet_stdout_load(path)
    providers = ctypes.POINTER(ctypes.POINTER(_Interface))()
    count = ctypes.c_uint32()
    lib.QnnInterface_getProviders.restype = ctypes.c_uint64
    lib.QnnInterface_getProviders.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    status = lib.QnnInterface_getProviders(ctypes.byref(providers), ctypes.byref(count))
    if status != 0 or count.value < 1:
        raise RuntimeError(f"QnnInterface_getProviders on {path} failed: status {status}")
    interface = providers[0].contents
    core = (interface.core_api.major, interface.core_api.minor, interface.core_api.patch)
    htp = (interface.backend_api.major, interface.backend_api.minor, interface.backend_api.patch)
    keep: list[Any] = [lib, providers]
    if not needs_bridge(htp):
        _STATE = AbiState(path, core, htp, False, keep, [0])
        return _STATE

    table = ctypes.addressof(interface) + ctypes.sizeof(_Interface)
    slot = table + DEVICE_CREATE_SLOT * ctypes.sizeof(ctypes.c_void_p)
    original = _DEVICE_CREATE(ctypes.c_void_p.from_address(slot).value)
    keep += [slot, original]
    calls = [0]

    def device_create(logger: int | None, configs: int | None, device: int | None) -> int:
        calls[0] += 1
        if not configs:
            return int(original(logger, configs, device))
        entries = []
        i = 0
        while True:
            entry = ctypes.c_void_p.from_address(configs + 8 * i).value
            if not entry:
                break
            option = ctypes.c_int32.from_address(entry).value
            local: list[Any] = []
            entries.append(
                _relay_custom(entry, local) if option == QNN_DEVICE_CONFIG_OPTION_CUSTOM else entry
            )
            keep.extend(local)
            i += 1
        array = (ctypes.c_void_p * (len(entries) + 1))(*entries, None)
        keep.append(array)
        return int(original(logger, ctypes.addressof(array), device))

    wrapper = _DEVICE_CREATE(device_create)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    start = slot & ~(page - 1)
    if libc.mprotect(start, page, _PROT_READ_WRITE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect of the QNN interface table failed")
    ctypes.c_void_p.from_address(slot).value = ctypes.cast(wrapper, ctypes.c_void_p).value
    keep += [wrapper, device_create]
    _STATE = AbiState(path, core, htp, True, keep, calls)
    return _STATE
