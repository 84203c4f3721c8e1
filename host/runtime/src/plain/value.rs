//! JSON ↔ component values, exactly as [`super::schema`] describes them.
//!
//! Arguments are checked whole before the component runs: a value out of
//! its type's range, of the wrong kind, a missing field or a fraction
//! where an integer goes is refused with the JSON Pointer of the value, so
//! the model can fix the one field it got wrong. Nothing is rounded or
//! clamped: a 64-bit integer past what a double holds travels as a
//! decimal string both ways.

use super::schema::EXACT_IN_DOUBLE;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Number, Value};
use wasmtime::component::{Type, Val};

/// An argument that does not fit its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgError {
    /// JSON Pointer of the value (`""` for the arguments object).
    pub pointer: String,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "`{}`: {}", self.pointer, self.message)
        }
    }
}

/// Where a value is, for errors: a JSON Pointer built only when one is
/// reported.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn pointer(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Key(parent, key) => format!(
                "{}/{}",
                parent.pointer(),
                key.replace('~', "~0").replace('/', "~1")
            ),
            Path::Index(parent, i) => format!("{}/{i}", parent.pointer()),
        }
    }

    fn error(&self, message: impl Into<String>) -> ArgError {
        ArgError {
            pointer: self.pointer(),
            message: message.into(),
        }
    }
}

/// The arguments object as the function's parameters, in order. A
/// missing parameter is `none` when it is an `option`, else an error;
/// an argument the function does not take is an error.
pub(crate) fn arguments(args: &Value, params: &[(String, Type)]) -> Result<Vec<Val>, ArgError> {
    let root = Path::Root;
    let empty = Map::new();
    let object = match args {
        Value::Object(o) => o,
        // No arguments at all, for a function that takes none.
        Value::Null => &empty,
        other => {
            return Err(root.error(format!(
                "the arguments must be an object, not {}",
                kind(other)
            )));
        }
    };
    if let Some(extra) = object.keys().find(|k| !params.iter().any(|(p, _)| p == *k)) {
        let names: Vec<&str> = params.iter().map(|(p, _)| p.as_str()).collect();
        return Err(root.error(format!(
            "the function takes no argument `{extra}` (it takes: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    }
    params
        .iter()
        .map(|(name, ty)| {
            let at = Path::Key(&root, name);
            match object.get(name) {
                Some(v) => to_val(v, ty, &at),
                None if matches!(ty, Type::Option(_)) => Ok(Val::Option(None)),
                None => Err(root.error(format!("missing the required argument `{name}`"))),
            }
        })
        .collect()
}

fn to_val(v: &Value, ty: &Type, at: &Path<'_>) -> Result<Val, ArgError> {
    Ok(match ty {
        Type::Bool => Val::Bool(v.as_bool().ok_or_else(|| expected(at, "a boolean", v))?),
        Type::U8 => Val::U8(narrow(at, v, "u8")?),
        Type::U16 => Val::U16(narrow(at, v, "u16")?),
        Type::U32 => Val::U32(narrow(at, v, "u32")?),
        Type::S8 => Val::S8(narrow(at, v, "s8")?),
        Type::S16 => Val::S16(narrow(at, v, "s16")?),
        Type::S32 => Val::S32(narrow(at, v, "s32")?),
        Type::U64 => Val::U64(wide::<u64>(at, v, "u64")?),
        Type::S64 => Val::S64(wide::<i64>(at, v, "s64")?),
        Type::Float64 => Val::Float64(float(at, v)?),
        Type::Float32 => {
            let f = float(at, v)?;
            if f.is_finite() && f.abs() > f64::from(f32::MAX) {
                return Err(at.error(format!("{f} is out of range for f32")));
            }
            // The nearest f32, as the component model's own lowering rounds.
            Val::Float32(f as f32)
        }
        Type::Char => {
            let s = v
                .as_str()
                .ok_or_else(|| expected(at, "a one-character string", v))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(expected(at, "a one-character string", v)),
            }
        }
        Type::String => Val::String(
            v.as_str()
                .ok_or_else(|| expected(at, "a string", v))?
                .to_owned(),
        ),
        Type::List(l) => {
            let elem = l.ty();
            match (v, &elem) {
                (Value::String(s), Type::U8) => Val::List(
                    BASE64
                        .decode(s)
                        .map_err(|e| at.error(format!("not base64 ({e})")))?
                        .into_iter()
                        .map(Val::U8)
                        .collect(),
                ),
                (Value::Array(items), _) => Val::List(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| to_val(item, &elem, &Path::Index(at, i)))
                        .collect::<Result<_, _>>()?,
                ),
                _ if elem == Type::U8 => {
                    return Err(expected(at, "a base64 string or an array of bytes", v));
                }
                _ => return Err(expected(at, "an array", v)),
            }
        }
        Type::Tuple(t) => {
            let items = v.as_array().ok_or_else(|| expected(at, "an array", v))?;
            let types: Vec<Type> = t.types().collect();
            if items.len() != types.len() {
                return Err(at.error(format!(
                    "expected an array of {} items, got {}",
                    types.len(),
                    items.len()
                )));
            }
            Val::Tuple(
                items
                    .iter()
                    .zip(&types)
                    .enumerate()
                    .map(|(i, (item, ty))| to_val(item, ty, &Path::Index(at, i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Record(r) => {
            let object = v.as_object().ok_or_else(|| expected(at, "an object", v))?;
            let fields: Vec<_> = r.fields().collect();
            if let Some(extra) = object.keys().find(|k| !fields.iter().any(|f| f.name == *k)) {
                let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
                return Err(at.error(format!(
                    "no field `{extra}` (the fields are: {})",
                    names.join(", ")
                )));
            }
            Val::Record(
                fields
                    .into_iter()
                    .map(|f| {
                        let value = match object.get(f.name) {
                            Some(fv) => to_val(fv, &f.ty, &Path::Key(at, f.name))?,
                            None if matches!(f.ty, Type::Option(_)) => Val::Option(None),
                            None => {
                                return Err(at.error(format!("missing the field `{}`", f.name)));
                            }
                        };
                        Ok((f.name.to_owned(), value))
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Variant(var) => {
            let (case, payload) = tagged(at, v)?;
            let Some(c) = var.cases().find(|c| c.name == case) else {
                let names: Vec<&str> = var.cases().map(|c| c.name).collect();
                return Err(at.error(format!(
                    "no case `{case}` (the cases are: {})",
                    names.join(", ")
                )));
            };
            let payload = match (&c.ty, payload) {
                (None, None | Some(Value::Null)) => None,
                (None, Some(_)) => {
                    return Err(at.error(format!("the case `{case}` carries no value")));
                }
                (Some(t), Some(p)) => Some(Box::new(to_val(p, t, &Path::Key(at, case))?)),
                (Some(_), None) => {
                    return Err(at.error(format!(
                        "the case `{case}` carries a value: write {{\"{case}\": …}}"
                    )));
                }
            };
            Val::Variant(case.to_owned(), payload)
        }
        Type::Enum(e) => {
            let s = v.as_str().ok_or_else(|| expected(at, "a string", v))?;
            if !e.names().any(|n| n == s) {
                let names: Vec<&str> = e.names().collect();
                return Err(at.error(format!("{s:?} is not one of: {}", names.join(", "))));
            }
            Val::Enum(s.to_owned())
        }
        Type::Flags(f) => {
            let items = v
                .as_array()
                .ok_or_else(|| expected(at, "an array of flag names", v))?;
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let here = Path::Index(at, i);
                let name = item
                    .as_str()
                    .ok_or_else(|| expected(&here, "a flag name", item))?;
                if !f.names().any(|n| n == name) {
                    let names: Vec<&str> = f.names().collect();
                    return Err(here.error(format!(
                        "{name:?} is not one of the flags: {}",
                        names.join(", ")
                    )));
                }
                if set.iter().any(|s| s == name) {
                    return Err(here.error(format!("the flag {name:?} is given twice")));
                }
                set.push(name.to_owned());
            }
            Val::Flags(set)
        }
        Type::Option(o) => {
            let inner = o.ty();
            match v {
                Value::Null => Val::Option(None),
                _ if matches!(inner, Type::Option(_)) => {
                    let (key, payload) = tagged(at, v)?;
                    match (key, payload) {
                        ("some", Some(p)) => {
                            Val::Option(Some(Box::new(to_val(p, &inner, &Path::Key(at, "some"))?)))
                        }
                        _ => return Err(expected(at, "null or {\"some\": …}", v)),
                    }
                }
                _ => Val::Option(Some(Box::new(to_val(v, &inner, at)?))),
            }
        }
        Type::Result(r) => {
            let (key, payload) = tagged(at, v)?;
            let side = |ty: Option<Type>, payload: Option<&Value>, key: &str| match (ty, payload) {
                (None, None | Some(Value::Null)) => Ok(None),
                (None, Some(_)) => Err(at.error(format!("`{key}` carries no value here"))),
                (Some(t), Some(p)) => Ok(Some(Box::new(to_val(p, &t, &Path::Key(at, key))?))),
                (Some(_), None) => Err(at.error(format!("`{key}` needs a value"))),
            };
            match key {
                "ok" => Val::Result(Ok(side(r.ok(), payload, "ok")?)),
                "err" => Val::Result(Err(side(r.err(), payload, "err")?)),
                _ => return Err(expected(at, "{\"ok\": …} or {\"err\": …}", v)),
            }
        }
        Type::Own(_)
        | Type::Borrow(_)
        | Type::Future(_)
        | Type::Stream(_)
        | Type::ErrorContext
        | Type::Map(_)
        | Type::FixedLengthList(_) => {
            // Such functions are not served (see `schema`).
            return Err(at.error("this type cannot come from JSON"));
        }
    })
}

/// A tagged value: `"tag"` alone, or `{"tag": payload}` with one key.
fn tagged<'v>(at: &Path<'_>, v: &'v Value) -> Result<(&'v str, Option<&'v Value>), ArgError> {
    match v {
        Value::String(s) => Ok((s.as_str(), None)),
        Value::Object(o) if o.len() == 1 => {
            let (k, p) = o.iter().next().ok_or_else(|| at.error("empty object"))?;
            Ok((k.as_str(), Some(p)))
        }
        _ => Err(expected(
            at,
            "\"case\" or an object with one key, {\"case\": …}",
            v,
        )),
    }
}

/// An integer of at most 32 bits: a JSON integer in range (an integral
/// number written with a fraction, `3.0`, counts; `3.5` does not).
fn narrow<T: TryFrom<i64> + TryFrom<u64>>(
    at: &Path<'_>,
    v: &Value,
    name: &str,
) -> Result<T, ArgError> {
    let n = v.as_number().ok_or_else(|| expected(at, "an integer", v))?;
    let whole = whole_number(n).ok_or_else(|| expected(at, "an integer", v))?;
    let fits = match whole {
        Whole::Signed(i) => T::try_from(i).ok(),
        Whole::Unsigned(u) => T::try_from(u).ok(),
    };
    fits.ok_or_else(|| at.error(format!("{n} is out of range for {name}")))
}

/// A 64-bit integer: a JSON integer, or a decimal string (the way past
/// ±2^53 for a client whose numbers are doubles).
fn wide<T>(at: &Path<'_>, v: &Value, name: &str) -> Result<T, ArgError>
where
    T: TryFrom<i64> + TryFrom<u64> + std::str::FromStr,
{
    if let Value::String(s) = v {
        let digits = s.strip_prefix('-').unwrap_or(s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(expected(at, "an integer or a decimal string", v));
        }
        return s
            .parse::<T>()
            .map_err(|_| at.error(format!("{s} is out of range for {name}")));
    }
    narrow(at, v, name)
}

enum Whole {
    Signed(i64),
    Unsigned(u64),
}

/// `n` as an integer, if it is one exactly.
fn whole_number(n: &Number) -> Option<Whole> {
    if let Some(u) = n.as_u64() {
        return Some(Whole::Unsigned(u));
    }
    if let Some(i) = n.as_i64() {
        return Some(Whole::Signed(i));
    }
    let f = n.as_f64()?;
    // Only where a double is exact: 1e20 is a double's approximation.
    if f.fract() == 0.0 && f.abs() <= EXACT_IN_DOUBLE as f64 {
        return Some(Whole::Signed(f as i64));
    }
    None
}

/// A float: a JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float(at: &Path<'_>, v: &Value) -> Result<f64, ArgError> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| expected(at, "a number", v)),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(expected(at, "a number", v)),
        },
        _ => Err(expected(at, "a number", v)),
    }
}

fn expected(at: &Path<'_>, what: &str, got: &Value) -> ArgError {
    at.error(format!("expected {what}, got {}", kind(got)))
}

/// How a JSON value reads in an error: its kind, and a short value.
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() <= 32 => format!("the string {s:?}"),
        Value::String(_) => "a string".into(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// A value from the component as JSON. `ty` is the value's type: an
/// `option` of an `option` is told apart by it.
pub(crate) fn to_json(v: &Val, ty: &Type) -> Value {
    match (v, ty) {
        (Val::Bool(b), _) => Value::Bool(*b),
        (Val::U8(n), _) => Value::from(*n),
        (Val::U16(n), _) => Value::from(*n),
        (Val::U32(n), _) => Value::from(*n),
        (Val::S8(n), _) => Value::from(*n),
        (Val::S16(n), _) => Value::from(*n),
        (Val::S32(n), _) => Value::from(*n),
        (Val::U64(n), _) if *n <= EXACT_IN_DOUBLE => Value::from(*n),
        (Val::U64(n), _) => Value::String(n.to_string()),
        (Val::S64(n), _) if n.unsigned_abs() <= EXACT_IN_DOUBLE => Value::from(*n),
        (Val::S64(n), _) => Value::String(n.to_string()),
        // The shortest decimal that reads back as the same f32 (0.1, not
        // 0.10000000149011612).
        (Val::Float32(f), _) => float_json(f.to_string().parse().unwrap_or(f64::from(*f))),
        (Val::Float64(f), _) => float_json(*f),
        (Val::Char(c), _) => Value::String(c.to_string()),
        (Val::String(s), _) => Value::String(s.clone()),
        (Val::List(items), Type::List(l)) => {
            let elem = l.ty();
            if elem == Type::U8 {
                let bytes: Vec<u8> = items
                    .iter()
                    .map(|b| match b {
                        Val::U8(b) => *b,
                        _ => 0,
                    })
                    .collect();
                Value::String(BASE64.encode(bytes))
            } else {
                Value::Array(items.iter().map(|i| to_json(i, &elem)).collect())
            }
        }
        (Val::Tuple(items), Type::Tuple(t)) => Value::Array(
            items
                .iter()
                .zip(t.types())
                .map(|(i, ty)| to_json(i, &ty))
                .collect(),
        ),
        (Val::Record(fields), Type::Record(r)) => Value::Object(
            fields
                .iter()
                .zip(r.fields())
                .map(|((name, v), f)| (name.clone(), to_json(v, &f.ty)))
                .collect(),
        ),
        (Val::Variant(case, payload), Type::Variant(var)) => {
            let ty = var.cases().find(|c| c.name == case).and_then(|c| c.ty);
            match (payload, ty) {
                (Some(p), Some(t)) => single(case, to_json(p, &t)),
                _ => Value::String(case.clone()),
            }
        }
        (Val::Enum(case), _) => Value::String(case.clone()),
        (Val::Flags(set), _) => Value::Array(set.iter().cloned().map(Value::String).collect()),
        (Val::Option(None), _) => Value::Null,
        (Val::Option(Some(inner)), Type::Option(o)) => {
            let t = o.ty();
            let value = to_json(inner, &t);
            if matches!(t, Type::Option(_)) {
                single("some", value)
            } else {
                value
            }
        }
        (Val::Result(r), Type::Result(rt)) => match r {
            Ok(v) => single("ok", side(v.as_deref(), rt.ok())),
            Err(e) => single("err", side(e.as_deref(), rt.err())),
        },
        // A value that does not match its type (never from wasmtime,
        // which lifts by the type): its shape without the type's help.
        (other, _) => Value::String(format!("{other:?}")),
    }
}

fn side(v: Option<&Val>, ty: Option<Type>) -> Value {
    match (v, ty) {
        (Some(v), Some(t)) => to_json(v, &t),
        _ => Value::Null,
    }
}

fn single(key: &str, value: Value) -> Value {
    let mut m = Map::with_capacity(1);
    m.insert(key.to_owned(), value);
    Value::Object(m)
}

fn float_json(f: f64) -> Value {
    if f.is_nan() {
        Value::from("NaN")
    } else if f == f64::INFINITY {
        Value::from("Infinity")
    } else if f == f64::NEG_INFINITY {
        Value::from("-Infinity")
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}
