//! A plain component: the world `plain` of `wit/test-plain/plain.wit`,
//! ordinary exported functions over every WIT type with nothing of
//! `toolhost:tool` inside, as the components that already exist are (a
//! wassette example, say). The host serves each function as a tool; the
//! JavaScript and Python test components implement the same world.
//!
//! Every `echo` function returns what it was given; `lookup` fails in each
//! way a `result` can; `counters` has a resource (its functions that take
//! or return one are not served) and one plain function beside it.

/// The world's logic, plain Rust (tested natively).
pub mod logic {
    /// `find`: a word's definition.
    pub fn define(word: &str) -> Option<String> {
        match word {
            "wasm" => Some("a portable binary instruction format".to_owned()),
            _ => None,
        }
    }

    /// `lookup.find`: `one` is 1, `two` is 2.
    pub fn find(name: &str) -> Result<u32, &'static str> {
        match name {
            "" => Err("bad-name"),
            "one" => Ok(1),
            "two" => Ok(2),
            _ => Err("not-found"),
        }
    }

    /// `lookup.parse`: a decimal `u64`.
    pub fn parse(text: &str) -> Result<u64, Option<String>> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Some(text.to_owned()));
        }
        text.parse().map_err(|_| None)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn lookups_fail_in_each_way() {
            assert_eq!(find("two"), Ok(2));
            assert_eq!(find(""), Err("bad-name"));
            assert_eq!(find("three"), Err("not-found"));
            assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
            assert_eq!(parse("18446744073709551616"), Err(None));
            assert_eq!(parse("x1"), Err(Some("x1".to_owned())));
            assert!(define("wasm").is_some());
        }
    }
}

#[cfg(target_arch = "wasm32")]
#[allow(missing_docs, unsafe_op_in_unsafe_fn, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/test-plain",
        world: "plain",
        generate_all,
    });
}

#[cfg(target_arch = "wasm32")]
mod component {
    use super::bindings::Guest;
    use super::bindings::exports::toolhost_test::plain::{counters, echo, lookup};
    use super::logic;
    use std::cell::Cell;

    /// `deep`'s parameter: lists nested 66 deep.
    type Deep = Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<u8>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>;

    struct Plain;

    impl Guest for Plain {
        fn add(a: i64, b: i64) -> i64 {
            a.wrapping_add(b)
        }

        fn greet(name: String) -> String {
            format!("Hello, {name}!")
        }

        fn nothing() {}

        fn setting(key: String) -> Option<String> {
            super::bindings::wasi::config::store::get(&key)
                .ok()
                .flatten()
        }

        fn deep(v: Deep) -> u32 {
            v.len() as u32
        }

        fn find(word: String) -> Option<String> {
            logic::define(&word)
        }
    }

    impl echo::Guest for Plain {
        fn integers(v: echo::Ints) -> echo::Ints {
            v
        }

        fn floats(a: f32, b: f64) -> (f32, f64) {
            (a, b)
        }

        fn text(c: char, s: String, b: bool) -> (char, String, bool) {
            (c, s, b)
        }

        fn bytes(data: Vec<u8>) -> (Vec<u8>, u32) {
            let n = data.len() as u32;
            (data, n)
        }

        fn points(items: Vec<echo::Point>) -> Vec<echo::Point> {
            items
        }

        fn maybe(
            v: Option<u32>,
            nested: Option<Option<String>>,
        ) -> (Option<u32>, Option<Option<String>>) {
            (v, nested)
        }

        fn shapes(
            s: echo::Shape,
            c: echo::Color,
            p: echo::Perms,
        ) -> (echo::Shape, echo::Color, echo::Perms) {
            (s, c, p)
        }

        fn outcome(r: Result<u32, String>) -> Result<Result<u32, String>, ()> {
            Ok(r)
        }
    }

    impl lookup::Guest for Plain {
        fn find(name: String) -> Result<u32, lookup::LookupError> {
            logic::find(&name).map_err(|e| match e {
                "bad-name" => lookup::LookupError::BadName,
                _ => lookup::LookupError::NotFound,
            })
        }

        fn parse(text: String) -> Result<u64, lookup::ParseError> {
            logic::parse(&text).map_err(|e| match e {
                Some(t) => lookup::ParseError::NotANumber(t),
                None => lookup::ParseError::Overflow,
            })
        }

        fn fail(message: String) -> Result<String, String> {
            Err(message)
        }
    }

    struct Counter(Cell<u32>);

    impl counters::GuestCounter for Counter {
        fn new(start: u32) -> Counter {
            Counter(Cell::new(start))
        }

        fn next(&self) -> u32 {
            let n = self.0.get();
            self.0.set(n.wrapping_add(1));
            n
        }
    }

    impl counters::Guest for Plain {
        type Counter = Counter;

        fn bump(c: counters::CounterBorrow<'_>) -> u32 {
            c.get::<Counter>().next_value()
        }

        fn make(start: u32) -> counters::Counter {
            counters::Counter::new(Counter(Cell::new(start)))
        }

        fn zero() -> u32 {
            0
        }
    }

    impl Counter {
        fn next_value(&self) -> u32 {
            counters::GuestCounter::next(self)
        }
    }

    super::bindings::export!(Plain with_types_in super::bindings);
}
