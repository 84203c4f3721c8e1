//! One 2-D half-precision tensor out of a safetensors file: an 8-byte
//! little-endian header length, a JSON header naming each tensor's dtype,
//! shape and byte range, then the data. Every field is checked against
//! the file before a byte is read.

use crate::EmbedError;
use serde_json::Value;

/// The tensor `name` of `file` as rows × columns of `f32`, row-major.
pub fn f16_matrix(file: &[u8], name: &str) -> Result<(Vec<f32>, usize, usize), EmbedError> {
    let bad = |what: String| EmbedError::Weights(format!("{name}: {what}"));
    let n = file
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad("shorter than its header length".into()))?;
    let header = usize::try_from(n)
        .ok()
        .and_then(|n| file.get(8..8usize.checked_add(n)?))
        .ok_or_else(|| bad(format!("a header of {n} bytes past the file's end")))?;
    let data = &file[8 + header.len()..];
    let header: Value =
        serde_json::from_slice(header).map_err(|e| bad(format!("its header: {e}")))?;
    let tensor = header
        .get(name)
        .ok_or_else(|| bad("no such tensor".into()))?;
    if tensor["dtype"] != "F16" {
        return Err(bad(format!("dtype {}, not F16", tensor["dtype"])));
    }
    let dims = |v: &Value| -> Option<Vec<usize>> {
        v.as_array()?
            .iter()
            .map(|d| usize::try_from(d.as_u64()?).ok())
            .collect()
    };
    let (Some(shape), Some(range)) = (dims(&tensor["shape"]), dims(&tensor["data_offsets"])) else {
        return Err(bad(
            "its shape or data offsets are not lists of sizes".into()
        ));
    };
    let (&[rows, cols], &[start, end]) = (&shape[..], &range[..]) else {
        return Err(bad(format!("shape {shape:?}, offsets {range:?}: not 2-D")));
    };
    let bytes = data
        .get(start..end)
        .filter(|b| rows.checked_mul(cols).and_then(|n| n.checked_mul(2)) == Some(b.len()))
        .ok_or_else(|| {
            bad(format!(
                "bytes {start}..{end} do not hold {rows}×{cols} halves"
            ))
        })?;
    let values = bytes
        .chunks_exact(2)
        .map(|h| f16_to_f32(u16::from_le_bytes([h[0], h[1]])))
        .collect();
    Ok((values, rows, cols))
}

/// An IEEE 754 half as a single (subnormals, infinities and NaN kept).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        // Subnormal: value = mantissa × 2⁻²⁴.
        (0, m) => return sign_of(h) * m as f32 * 2f32.powi(-24),
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn sign_of(h: u16) -> f32 {
    if h >> 15 == 1 { -1.0 } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_convert_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
    }

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn reads_a_matrix_and_refuses_a_header_that_lies() {
        let ok = file(
            r#"{"t":{"dtype":"F16","shape":[2,1],"data_offsets":[0,4]}}"#,
            &[0x00, 0x3c, 0x00, 0xc0],
        );
        let (m, r, c) = f16_matrix(&ok, "t").unwrap_or_default();
        assert_eq!((m, r, c), (vec![1.0, -2.0], 2, 1));
        for (header, why) in [
            (
                r#"{"t":{"dtype":"F32","shape":[2,1],"data_offsets":[0,4]}}"#,
                "dtype",
            ),
            (
                r#"{"t":{"dtype":"F16","shape":[2,2],"data_offsets":[0,4]}}"#,
                "do not hold",
            ),
            (
                r#"{"t":{"dtype":"F16","shape":[2,1],"data_offsets":[0,9]}}"#,
                "do not hold",
            ),
            (
                r#"{"t":{"dtype":"F16","shape":[4],"data_offsets":[0,4]}}"#,
                "not 2-D",
            ),
            (r#"{"u":{}}"#, "no such tensor"),
            (
                r#"{"t":{"dtype":"F16","shape":[-1,1],"data_offsets":[0,4]}}"#,
                "not lists",
            ),
        ] {
            let err = f16_matrix(&file(header, &[0; 4]), "t")
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert!(
                err.as_ref().is_err_and(|e| e.contains(why)),
                "{header}: {err:?}"
            );
        }
        let mut lying = 1u64.to_le_bytes().to_vec();
        lying[7] = 0xff;
        assert!(f16_matrix(&lying, "t").is_err());
    }
}
