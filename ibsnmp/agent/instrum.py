"""The per-request MIB instrumentation view of one SNMP context.

The objects the agent serves itself (the InfiniBand MIBs, IF-MIB) are not loaded into
pysnmp's MIB tree: `ContextView` answers OIDs under the VirtualMib's subtrees from it, for
the context's target, and everything else (the SNMPv2-MIB system group, snmp statistics,
snmpEngine...) from pysnmp's own MibInstrumController. A GETNEXT takes whichever tree has
the nearer instance, and one inside a subtree asks pysnmp nothing. Every value passes
pysnmp's access check; a SET is all or nothing across both trees.
"""

from __future__ import annotations

import logging
from typing import Any

from pyasn1.error import PyAsn1Error
from pysnmp.proto import rfc1905
from pysnmp.smi import error as smi_error
from pysnmp.smi.instrum import MibInstrumController

from ibsnmp.mib.api import (
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    ContextTarget,
    Oid,
    PreparedWrite,
    SetError,
    VirtualMib,
    WritableMib,
)

from .views import past_key_subtree

log = logging.getLogger(__name__)

# api.SetError status -> the pysnmp exception that answers it.
_SET_ERRORS = {
    "noAccess": smi_error.NoAccessError,
    "notWritable": smi_error.NotWritableError,
    "wrongType": smi_error.WrongTypeError,
    "wrongLength": smi_error.WrongLengthError,
    "wrongEncoding": smi_error.WrongEncodingError,
    "wrongValue": smi_error.WrongValueError,
    "noCreation": smi_error.NoCreationError,
    "inconsistentValue": smi_error.InconsistentValueError,
    "inconsistentName": smi_error.InconsistentNameError,
    "resourceUnavailable": smi_error.ResourceUnavailableError,
    "commitFailed": smi_error.CommitFailedError,
    "undoFailed": smi_error.UndoFailedError,
    "genErr": smi_error.GenError,
}

SET_SERIAL_NO = (1, 3, 6, 1, 6, 3, 1, 1, 6, 1, 0)  # SNMPv2-MIB snmpSetSerialNo.0 (RFC 3418)
END_OF_MIB_VIEW = rfc1905.endOfMibView
_EndOfMibView = rfc1905.EndOfMibView
_NoSuchObject = rfc1905.noSuchObject
_NoSuchInstance = rfc1905.noSuchInstance
_UNREAD = object()  # the VirtualMib's next instance, not asked for yet


def as_oid(name: Any) -> Oid:
    """A plain tuple for a pyasn1 ObjectName or a tuple (cheap on both)."""
    if type(name) is tuple:
        return name
    as_tuple = getattr(name, "asTuple", None)
    return as_tuple() if as_tuple is not None else tuple(name)


def is_end_of_mib_view(value: Any) -> bool:
    return isinstance(value, _EndOfMibView)


class ContextView:
    """What `SnmpContext.get_mib_instrum` returns: one request, one context.

    A handful of references built per request: nothing is stored per node.
    `target` is None for a context nobody knows: the access check then fails
    the request the standard way (noSuchContext) before any value is read.

    Each value is checked with the access-control function pysnmp passes in
    the request context (`context["acFun"]`, i.e.
    CommandResponderBase.verify_access): it answers truthy for "not in view"
    and raises for the request-level failures (authorizationError, unknown
    context -> REPORT, Counter64 over SNMPv1 on GETNEXT -> NoAccessError,
    taken as "skip this one").
    """

    __slots__ = ("_base", "_mib", "_writable", "_target", "_subtrees")

    def __init__(self, base: MibInstrumController, mib: VirtualMib,
                 target: ContextTarget | None) -> None:
        self._base = base
        self._mib = mib
        # A MIB without SETs (WritableMib) makes every object notWritable.
        self._writable = mib if isinstance(mib, WritableMib) else None
        self._target = target
        self._subtrees = mib.subtrees

    # -- GET ------------------------------------------------------------------

    def read_variables(self, *varBinds: Any, **context: Any) -> list[tuple[Any, Any]]:
        context["contextTarget"] = self._target
        ac_fun = context["acFun"]
        out: list[tuple[Any, Any]] = []
        for idx, (name, val) in enumerate(varBinds):
            context["idx"] = idx
            oid = as_oid(name)
            # Not in view -> noSuchObject (RFC 3416 4.2.1, as net-snmp does;
            # stock pysnmp would fail the whole PDU with noAccess).
            if ac_fun("read", (oid, None), **context):
                out.append((oid, _NoSuchObject))
            elif self._subtrees.holds(oid):
                out.append((oid, self._virtual_get(oid, idx)))
            else:
                out.append(self._base_get(oid, val, idx, context))
        return out

    def _virtual_get(self, oid: Oid, idx: int) -> Any:
        if self._target is None:
            return _NoSuchObject
        try:
            value = self._mib.get(self._target, oid)
        except Exception:
            log.exception("VirtualMib.get failed for %s", ".".join(map(str, oid)))
            raise smi_error.GenError(name=oid, idx=idx) from None
        if value is NO_SUCH_OBJECT:
            return _NoSuchObject
        if value is NO_SUCH_INSTANCE:
            return _NoSuchInstance
        return value

    def _base_get(self, oid: Oid, val: Any, idx: int, context: dict[str, Any]) -> tuple[Any, Any]:
        # One varbind per call so a missing object does not fail the others.
        try:
            ((name, value),) = self._base.read_variables((oid, val), **context)
        except smi_error.NoSuchInstanceError:
            return oid, _NoSuchInstance
        except (smi_error.NoSuchObjectError, smi_error.NoAccessError):
            # NoAccessError here: a scalar's own OID (no .0) or a
            # not-accessible object; both are "nothing to read" for GET.
            return oid, self._base_missing(oid)
        except smi_error.MibOperationError as exc:
            exc.update({"idx": idx})
            raise
        return name, value

    def _base_missing(self, oid: Oid) -> Any:
        """noSuchInstance for an object type's own OID, else noSuchObject.

        RFC 3416 4.2.1: a name that is the prefix of a potential variable
        (a scalar or a column without its instance part, e.g. sysDescr) is
        noSuchInstance; tables, entries and unknown names are noSuchObject,
        as net-snmp's snmpd answers.
        """
        builder = self._base.get_mib_builder()
        tree, scalar_class = builder.import_symbols("SNMPv2-SMI", "iso", "MibScalar")
        try:
            node = tree.getNode(oid)
        except smi_error.SmiError:
            return _NoSuchObject
        if as_oid(node.name) == oid and isinstance(node, scalar_class):  # columns too
            return _NoSuchInstance
        return _NoSuchObject

    # -- GETNEXT / GETBULK ------------------------------------------------------

    def read_next_variables(self, *varBinds: Any, **context: Any) -> list[tuple[Any, Any]]:
        context["contextTarget"] = self._target
        out: list[tuple[Any, Any]] = []
        for idx, (name, val) in enumerate(varBinds):
            context["idx"] = idx
            out.append(self._next(as_oid(name), val, idx, context))
        return out

    def _next(self, oid: Oid, val: Any, idx: int, context: dict[str, Any]) -> tuple[Any, Any]:
        end = self._subtrees.end_of(oid)
        if end is None:
            return self._merged(oid, _UNREAD, val, idx, context)
        found = self._virtual_next(oid, idx, context)
        if found is not None and as_oid(found[0]) < end:
            return found  # inside the subtree: pysnmp's tree has nothing there
        return self._merged(oid, found, val, idx, context)

    def _merged(self, oid: Oid, virtual: Any, val: Any, idx: int,
                context: dict[str, Any]) -> tuple[Any, Any]:
        """The nearer of pysnmp's next instance after `oid` and the
        VirtualMib's (`virtual`: already read, None at its end, or _UNREAD),
        for an `oid` outside the served subtrees or at the end of one."""
        base = self._base_next_outside(oid, val, idx, context)
        root = self._subtrees.next_root(oid)
        if root is None or (not is_end_of_mib_view(base[1]) and as_oid(base[0]) < root):
            return base  # no served subtree comes first
        if virtual is _UNREAD:
            virtual = self._virtual_next(oid, idx, context)
        if virtual is None:
            return base
        if is_end_of_mib_view(base[1]) or as_oid(virtual[0]) < as_oid(base[0]):
            nearer: tuple[Any, Any] = virtual
            return nearer
        return base

    def _base_next_outside(self, oid: Oid, val: Any, idx: int,
                           context: dict[str, Any]) -> tuple[Any, Any]:
        """pysnmp's next instance after `oid`, or endOfMibView; never one
        inside a served subtree (there should be none: stepped over if so)."""
        answer = self._base_next(oid, val, idx, context)
        while not is_end_of_mib_view(answer[1]):
            name = as_oid(answer[0])
            if not self._subtrees.holds(name):
                return answer
            log.debug("pysnmp's tree has %s inside a served subtree", ".".join(map(str, name)))
            answer = self._base_next(name, val, idx, context)
        return oid, END_OF_MIB_VIEW

    def _virtual_next(self, oid: Oid, idx: int, context: dict[str, Any]) -> tuple[Any, Any] | None:
        target = self._target
        if target is None:
            # Unknown context: let the access check raise (-> REPORT / genErr).
            context["acFun"]("read", (oid, None), **context)
            return None
        ac_fun = context["acFun"]
        get_next = self._mib.get_next
        while True:
            try:
                found = get_next(target, oid)
            except Exception:
                log.exception("VirtualMib.get_next failed after %s", ".".join(map(str, oid)))
                raise smi_error.GenError(name=oid, idx=idx) from None
            if found is None:
                return None
            next_oid, value = found
            try:
                if not ac_fun("read", (next_oid, value), **context):
                    return next_oid, value
            except smi_error.NoAccessError:
                oid = next_oid  # e.g. Counter64 over SNMPv1 (RFC 2576 4.1.2.1): skip it
                continue
            # Not in view. A hidden key column is hidden whole: leave it in
            # one step rather than refusing each of its (maybe 100,000) rows.
            oid = past_key_subtree(next_oid)

    def _base_next(self, oid: Oid, val: Any, idx: int, context: dict[str, Any]) -> tuple[Any, Any]:
        try:
            ((name, value),) = self._base.read_next_variables((oid, val), **context)
        except (smi_error.NoSuchObjectError, smi_error.NoSuchInstanceError,
                smi_error.EndOfMibViewError):
            return oid, END_OF_MIB_VIEW
        except smi_error.MibOperationError as exc:
            exc.update({"idx": idx})
            raise
        return name, value

    # -- SET --------------------------------------------------------------------

    def write_variables(self, *varBinds: Any, **context: Any) -> list[tuple[Any, Any]]:
        """SET, all or nothing (RFC 3416 4.2.5).

        Access is checked first for every varbind (noAccess for any object
        outside the write view). Then the varbinds of the served subtrees,
        and those of the objects outside them the VirtualMib writes
        (`writes_outside`: sysContact, sysName, sysLocation,
        snmpEnableAuthenTraps, saved with its state) if the engine's MIB
        lets them be written (else notWritable), are tested together by
        the VirtualMib (`prepare_write`), the rest of the base tree's are
        written by pysnmp, and only then is the VirtualMib's part
        committed: a failure in either part leaves the other unchanged
        (pysnmp undoes its own on failure).
        A VirtualMib that is no WritableMib makes every object notWritable.
        """
        context["contextTarget"] = self._target
        ac_fun = context["acFun"]
        writable = self._writable
        base_positions: list[int] = []
        virtual: list[tuple[int, Oid, Any]] = []
        shown: list[tuple[Oid, Any]] = []  # outside objects the MIB writes
        for idx, (name, val) in enumerate(varBinds):
            oid = as_oid(name)
            context["idx"] = idx
            # Access first (RFC 3416 4.2.5 step 1): outside the write view
            # is noAccess, whichever tree the object is in.
            if ac_fun("write", (oid, val), **context):
                raise smi_error.NoAccessError(name=oid, idx=idx)
            if not self._subtrees.holds(oid):
                if writable is None or not writable.writes_outside(oid):
                    self._check_base_type(oid, val, idx)
                    if oid == SET_SERIAL_NO:
                        self._check_set_serial_no(val, idx)
                    base_positions.append(idx)
                    continue
                if not self._base_writable(oid):
                    raise smi_error.NotWritableError(name=oid, idx=idx)
                shown.append((oid, val))
            virtual.append((idx, oid, val))
        prepared = self._prepare(virtual) if virtual else None
        # The response echoes the request's varbinds (RFC 3416 4.2.5), also
        # when an object is named twice.
        out = [(as_oid(name), val) for name, val in varBinds]
        if base_positions:
            try:
                self._base.write_variables(*(varBinds[i] for i in base_positions), **context)
            except smi_error.MibOperationError as exc:
                if "idx" in exc and isinstance(exc["idx"], int) \
                        and 0 <= exc["idx"] < len(base_positions):
                    exc.update({"idx": base_positions[exc["idx"]]})
                raise
        if prepared is not None:
            try:
                prepared.commit()
            except SetError as exc:
                idx, oid, _ = virtual[0]
                log.error("SET not committed: %s", exc.reason or exc.status)
                # pysnmp cannot take back what it wrote in the base tree.
                error = smi_error.UndoFailedError if base_positions else smi_error.CommitFailedError
                raise error(name=oid, idx=idx) from None
        for oid, val in shown:  # committed: pysnmp's instances now read them
            self._show_base(oid, val)
        return out

    def _base_writable(self, oid: Oid) -> bool:
        """Whether the scalar of the instance `oid` in pysnmp's tree may be
        written (True when there is none: the VirtualMib then decides). An
        object the engine's MIB declares read-only is notWritable whoever
        claims it: that is how the configuration file fixes
        snmpEnableAuthenTraps (agent.system_defaults.AuthenTraps)."""
        tree, scalar_class = self._base.get_mib_builder().import_symbols(
            "SNMPv2-SMI", "iso", "MibScalar")
        for length in range(len(oid) - 1, 0, -1):
            try:
                node = tree.getNode(oid[:length])
            except smi_error.SmiError:
                continue
            # The nearest node: a scalar, or nothing an instance `oid` could be of.
            return not isinstance(node, scalar_class) or \
                node.maxAccess in ("read-write", "read-create")
        return True

    def _check_set_serial_no(self, val: Any, idx: int) -> None:
        """SNMPv2-TC TestAndIncr: a value outside its range 0..2147483647 is
        wrongValue (RFC 3416 4.2.5; badValue in SNMPv1), one in range other
        than the value held is inconsistentValue."""
        (serial,) = self._base.get_mib_builder().import_symbols("__SNMPv2-MIB", "snmpSetSerialNo")
        try:
            serial.syntax.clone(int(val))  # the syntax's own range constraint
        except PyAsn1Error:
            raise smi_error.WrongValueError(name=SET_SERIAL_NO, idx=idx) from None
        if int(val) != int(serial.syntax):
            raise smi_error.InconsistentValueError(name=SET_SERIAL_NO, idx=idx)

    def _show_base(self, oid: Oid, val: Any) -> None:
        # The objects written outside the subtrees are system group scalars,
        # whose instances pysnmp keeps in its __SNMPv2-MIB module.
        instances = self._base.get_mib_builder().mibSymbols.get("__SNMPv2-MIB", {})
        for instance in instances.values():
            if getattr(instance, "name", None) == oid and hasattr(instance, "syntax"):
                instance.syntax = instance.syntax.clone(val)
                return
        log.error("no instance of %s to show the value written", ".".join(map(str, oid)))

    def _prepare(self, virtual: list[tuple[int, Oid, Any]]) -> PreparedWrite:
        idx, oid, _ = virtual[0]
        writable = self._writable
        if writable is None or self._target is None:
            raise smi_error.NotWritableError(name=oid, idx=idx)
        try:
            return writable.prepare_write(self._target, [(oid, val) for _, oid, val in virtual])
        except SetError as exc:
            idx, oid, _ = virtual[exc.index]
            if exc.reason:
                log.debug("SET refused (%s) at %s: %s", exc.status, ".".join(map(str, oid)),
                          exc.reason)
            raise _SET_ERRORS.get(exc.status, smi_error.GenError)(name=oid, idx=idx) from None
        except Exception:
            log.exception("VirtualMib.prepare_write failed at %s", ".".join(map(str, oid)))
            raise smi_error.GenError(name=oid, idx=idx) from None

    def _check_base_type(self, oid: Oid, val: Any, idx: int) -> None:
        # pysnmp would coerce e.g. an INTEGER into sysContact; RFC 3416
        # 4.2.5 wants wrongType. Objects pysnmp cannot find are left to it.
        tree, scalar_class = self._base.get_mib_builder().import_symbols(
            "SNMPv2-SMI", "iso", "MibScalar")
        try:
            node = tree.getNode(oid)
        except smi_error.SmiError:
            return
        if isinstance(node, scalar_class) and as_oid(node.name) == oid:
            # An object type's own name (sysLocation without .0, a column
            # without an index) names no variable and never will: noCreation,
            # as snmpd answers (pysnmp: noAccess, though it is in the view).
            raise smi_error.NoCreationError(name=oid, idx=idx)
        syntax = getattr(node, "syntax", None)
        tag_set = getattr(val, "tagSet", None)
        if syntax is not None and tag_set is not None and tag_set != syntax.tagSet:
            raise smi_error.WrongTypeError(name=oid, idx=idx)
