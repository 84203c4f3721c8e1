// A plain component in JavaScript: the world `plain` of
// wit/test-plain/plain.wit, built with componentize-js (see
// ../plain-build.sh). The same functions as the Rust and Python test
// components; the host serves each as a tool.

import { get } from "wasi:config/store@0.2.0-draft";

// componentize-js 0.22.0 hands an `s64` argument over as its unsigned
// 64-bit pattern (-4 arrives as 2^64 - 4): read it back as signed. (Its
// engine also aborts returning a negative `s64`, or one past 2^63 - 1,
// however written: a sum below zero fails in the guest.)
const s64 = (n) => BigInt.asIntN(64, n);

export function add(a, b) {
    return s64(a) + s64(b);
}

export function greet(name) {
    return `Hello, ${name}!`;
}

export function nothing() {}

export function setting(key) {
    return get(key);
}

export function deep(v) {
    return v.length;
}

export function find(word) {
    return word === "wasm" ? "a portable binary instruction format" : undefined;
}

export const echo = {
    integers: (v) => v,
    floats: (a, b) => [a, b],
    text: (c, s, b) => [c, s, b],
    bytes: (data) => [data, data.length],
    points: (items) => items,
    maybe: (v, nested) => [v, nested],
    shapes: (s, c, p) => [s, c, p],
    outcome: (r) => r,
};

export const lookup = {
    find(name) {
        if (name === "") throw "bad-name";
        const found = { one: 1, two: 2 }[name];
        if (found === undefined) throw "not-found";
        return found;
    },
    parse(text) {
        if (!/^[0-9]+$/.test(text)) throw { tag: "not-a-number", val: text };
        const n = BigInt(text);
        if (n > 18446744073709551615n) throw { tag: "overflow" };
        return n;
    },
    fail(message) {
        throw message;
    },
};

class Counter {
    constructor(start) {
        this.n = start;
    }
    next() {
        return this.n++;
    }
}

export const counters = {
    Counter,
    bump: (c) => c.next(),
    make: (start) => new Counter(start),
    zero: () => 0,
};
