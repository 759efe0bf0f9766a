"""A small pprof decoder for the tests (no protobuf module needed): the wire format, and the
few messages of perftools.profiles.Profile the tests look at."""
import gzip


def _varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data):
    """[(field number, wire type, value)]: ints for varints, bytes for length-delimited."""
    out, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            value = bytes(data[at:at + length])
            at += length
        elif wire == 1:
            value = int.from_bytes(data[at:at + 8], "little")
            at += 8
        elif wire == 5:
            value = int.from_bytes(data[at:at + 4], "little")
            at += 4
        else:
            raise ValueError("wire type %d" % wire)
        out.append((number, wire, value))
    return out


def _ints(value, wire):
    """A repeated integer field: packed (bytes) or one varint."""
    if wire == 0:
        return [value]
    result, at = [], 0
    while at < len(value):
        v, at = _varint(value, at)
        result.append(v)
    return result


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def decode(blob):
    """The profile as plain data: sample_types [(type, unit)], samples [{'stack': [labels
    root first], 'values': [...], 'labels': {key: str or num}}], period, time_nanos."""
    if blob[:2] == b"\x1f\x8b":
        blob = gzip.decompress(blob)
    top = fields(blob)
    strings = [v.decode("utf-8") for n, w, v in top if n == 6]
    functions, locations, samples, types = {}, {}, [], []
    period = time_nanos = 0
    for number, wire, value in top:
        if number == 1:
            f = dict((n, v) for n, _, v in fields(value))
            types.append((strings[f.get(1, 0)], strings[f.get(2, 0)]))
        elif number == 5:
            f = dict((n, v) for n, _, v in fields(value))
            functions[f.get(1, 0)] = (strings[f.get(2, 0)], strings[f.get(4, 0)])
        elif number == 4:
            loc_id, lines = 0, []
            for n, w, v in fields(value):
                if n == 1:
                    loc_id = v
                elif n == 4:
                    lf = dict((n2, v2) for n2, _, v2 in fields(v))
                    lines.append((lf.get(1, 0), _signed(lf.get(2, 0))))
            locations[loc_id] = lines
        elif number == 12:
            period = value
        elif number == 9:
            time_nanos = value
    for number, wire, value in top:
        if number != 2:
            continue
        locs, values, labels = [], [], {}
        for n, w, v in fields(value):
            if n == 1:
                locs.extend(_ints(v, w))
            elif n == 2:
                values.extend(_signed(x) for x in _ints(v, w))
            elif n == 3:
                lf = dict((n2, v2) for n2, _, v2 in fields(v))
                key = strings[lf.get(1, 0)]
                labels[key] = strings[lf[2]] if lf.get(2) else lf.get(3, 0)
        stack = []
        for loc in locs:  # leaf first
            for function_id, line in locations.get(loc, []):
                name, filename = functions.get(function_id, ("?", ""))
                stack.append("%s (%s:%d)" % (name, filename, line) if filename else name)
        samples.append({"stack": list(reversed(stack)), "values": values, "labels": labels})
    return {"sample_types": types, "samples": samples, "period": period,
            "time_nanos": time_nanos}


def totals(profile, type_name="samples"):
    """{(thread_id, stack tuple, state): value} of one sample type."""
    index = [t for t, _ in profile["sample_types"]].index(type_name)
    out = {}
    for s in profile["samples"]:
        key = (s["labels"].get("thread_id"), tuple(s["stack"]), s["labels"].get("state"))
        out[key] = out.get(key, 0) + s["values"][index]
    return out


def decode_file(path):
    with open(path, "rb") as f:
        return decode(f.read())
