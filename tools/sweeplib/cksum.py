"""POSIX cksum (the CRC of `cksum`): run directory names end in it, so a
sweep started by an earlier version of the tool still finds its runs."""

_POLY = 0x04C11DB7


def _table():
    table = []
    for byte in range(256):
        crc = byte << 24
        for _ in range(8):
            crc = (crc << 1) ^ _POLY if crc & 0x80000000 else crc << 1
        table.append(crc & 0xFFFFFFFF)
    return table


_TABLE = _table()


def cksum(data):
    """The CRC `cksum` prints for data (bytes): the bytes, then their
    length, least significant byte first, then the complement."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _TABLE[(crc >> 24) ^ byte]
    length = len(data)
    while length:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _TABLE[(crc >> 24) ^ (length & 0xFF)]
        length >>= 8
    return ~crc & 0xFFFFFFFF
