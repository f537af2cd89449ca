"""Amounts of money and time for the economics model: exact `Decimal`s, and how they print.

Every figure of DESIGN §4 must come out exactly (`$0.104`, not `$0.10400000000000001`), so all
arithmetic is `Decimal`; this module turns what users and config give (ints, floats, text) into
Decimals, refuses what cannot be an amount, and prints amounts as money, percentages and JSON
numbers.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from core.errors import UsageError

ZERO = Decimal(0)
ONE = Decimal(1)
MINUTES_PER_HOUR = Decimal(60)
BYTES_PER_GIB = Decimal(1024**3)
DAYS_PER_MONTH = Decimal(30)

Amount = Decimal | int | float | str


def to_decimal(value: Amount, what: str = "amount") -> Decimal:
    """An exact Decimal: floats go through their shortest text form, so 0.1 stays 0.1."""
    if isinstance(value, Decimal):
        result = value
    elif isinstance(value, bool):
        raise UsageError(f"invalid {what} {value!r}: expected a number")
    elif isinstance(value, int | str):
        try:
            result = Decimal(str(value).strip())
        except ArithmeticError as exc:  # decimal.InvalidOperation
            raise UsageError(f"invalid {what} {value!r}: expected a number") from exc
    else:
        result = Decimal(repr(value))
    if not result.is_finite():
        raise UsageError(f"invalid {what} {value!r}: expected a finite number")
    return result


def non_negative(value: Decimal, what: str) -> None:
    """Refuse a negative amount, naming what it was."""
    if value < 0:
        raise UsageError(f"{what} must not be negative (got {value})")


def json_number(value: Decimal) -> int | float:
    """A Decimal as the JSON number that prints the same digits (1.85, not 1.8500000000000001)."""
    normal = value.normalize()
    if normal == normal.to_integral_value():
        return int(normal)
    return float(normal)


def money(value: Decimal) -> str:
    """`$1.85`, `$37.00`; below a dollar up to four decimals (`$0.104`), negatives `-$0.06`."""
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    cents = magnitude.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    if cents == magnitude or magnitude >= 1:
        return f"{sign}${cents:,.2f}"
    fine = magnitude.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    return f"{sign}${_trimmed(fine, 2)}"


def percent(value: Decimal) -> str:
    """`5%`, `2.5%`."""
    return f"{_trimmed((value * 100).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP), 0)}%"


def _trimmed(value: Decimal, keep: int) -> str:
    text = f"{value:f}"
    if "." not in text:
        return text
    whole, fraction = text.split(".")
    fraction = fraction.rstrip("0").ljust(keep, "0")
    return f"{whole}.{fraction}" if fraction else whole
