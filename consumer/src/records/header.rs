//! Record headers as a borrowed view over the record's bytes.
//!
//! KIP-82 headers are an ordered list in which a key may repeat, so this is a list view, never a
//! map: iteration yields wire order and duplicates, and [`Headers::get_all`] / [`Headers::last`]
//! give the two lookups Java offers (`headers(key)`, `lastHeader(key)`). Nothing is allocated:
//! the record iterator already validated the header section, and each [`Header`] is a pair of
//! ranges into the record's buffer.

use std::ops::Range;
use std::str::Utf8Error;

use bytes::Bytes;

use super::varint::{read_varint, VarintError};

/// The headers of one record, in wire order.
#[derive(Debug, Clone, Copy)]
pub struct Headers<'a> {
    /// The record's buffer; header ranges index into it.
    record: &'a Bytes,
    /// Position of the first header in `record`.
    start: usize,
    /// Number of headers (validated against the record's bytes by the record iterator).
    count: u32,
}

impl<'a> Headers<'a> {
    pub(crate) fn new(record: &'a Bytes, start: usize, count: u32) -> Self {
        Self {
            record,
            start,
            count,
        }
    }

    /// Number of headers, duplicates included.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the record has no headers.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Headers in wire order.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter {
            record: self.record,
            pos: self.start,
            remaining: self.count,
        }
    }

    /// Every header whose key is `key`, in wire order.
    pub fn get_all<'k>(&self, key: &'k str) -> impl Iterator<Item = Header<'a>> + 'k
    where
        'a: 'k,
    {
        self.iter()
            .filter(move |header| header.key() == key.as_bytes())
    }

    /// The last header whose key is `key` (Java's `Headers.lastHeader`).
    pub fn last(&self, key: &str) -> Option<Header<'a>> {
        self.get_all(key).last()
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = Header<'a>;
    type IntoIter = HeaderIter<'a>;

    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// Iterator over [`Headers`].
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    record: &'a Bytes,
    pos: usize,
    remaining: u32,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = Header<'a>;

    fn next(&mut self) -> Option<Header<'a>> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        // Already validated by `scan_headers`, so failure here cannot happen; ending the
        // iteration is the panic-free answer if it somehow did.
        let (key, value) = read_header(self.record, &mut self.pos).ok()?;
        Some(Header {
            record: self.record,
            key,
            value,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining as usize))
    }
}

/// One header: a UTF-8 key (validated on access) and an optional value.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    record: &'a Bytes,
    key: Range<usize>,
    value: Option<Range<usize>>,
}

impl<'a> Header<'a> {
    /// The key's raw bytes.
    pub fn key(&self) -> &'a [u8] {
        &self.record[self.key.clone()]
    }

    /// The key as text. Kafka requires UTF-8 keys, but a foreign producer may not comply, so the
    /// check happens here, on access, instead of failing the whole batch.
    pub fn key_str(&self) -> Result<&'a str, Utf8Error> {
        std::str::from_utf8(self.key())
    }

    /// The value, `None` for a null value.
    pub fn value(&self) -> Option<&'a [u8]> {
        self.value.clone().map(|range| &self.record[range])
    }

    /// The value as a zero-copy slice of the underlying buffer, `None` for a null value.
    pub fn value_bytes(&self) -> Option<Bytes> {
        self.value.clone().map(|range| self.record.slice(range))
    }
}

/// Why a header section is malformed, for the record iterator to locate and report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderError {
    Varint {
        field: &'static str,
        error: VarintError,
    },
    Length {
        field: &'static str,
        length: i32,
        available_bytes: usize,
    },
}

/// Reads one header at `*pos` in `buf`, returning the key and value ranges.
pub(crate) fn read_header(
    buf: &[u8],
    pos: &mut usize,
) -> Result<(Range<usize>, Option<Range<usize>>), HeaderError> {
    let key = read_span(buf, pos, "header key length")?.ok_or(HeaderError::Length {
        field: "header key length",
        length: -1,
        available_bytes: buf.len() - *pos,
    })?;
    let value = read_span(buf, pos, "header value length")?;
    Ok((key, value))
}

/// Reads a varint length and the bytes it covers; `None` for the null length -1.
fn read_span(
    buf: &[u8],
    pos: &mut usize,
    field: &'static str,
) -> Result<Option<Range<usize>>, HeaderError> {
    let length = read_varint(buf, pos).map_err(|error| HeaderError::Varint { field, error })?;
    if length == -1 {
        return Ok(None);
    }
    let available_bytes = buf.len() - *pos;
    match usize::try_from(length) {
        Ok(len) if len <= available_bytes => {
            let start = *pos;
            *pos += len;
            Ok(Some(start..start + len))
        }
        _ => Err(HeaderError::Length {
            field,
            length,
            available_bytes,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::varint::write_varint;

    fn encode(headers: &[(&str, Option<&[u8]>)]) -> Bytes {
        let mut out = Vec::new();
        for (key, value) in headers {
            write_varint(&mut out, key.len() as i32);
            out.extend_from_slice(key.as_bytes());
            match value {
                Some(v) => {
                    write_varint(&mut out, v.len() as i32);
                    out.extend_from_slice(v);
                }
                None => write_varint(&mut out, -1),
            }
        }
        Bytes::from(out)
    }

    #[test]
    fn duplicates_keep_wire_order_and_lookups_work() {
        let buf = encode(&[
            ("a", Some(b"1")),
            ("b", None),
            ("a", Some(b"")),
            ("a", Some(b"3")),
        ]);
        let headers = Headers::new(&buf, 0, 4);
        let all: Vec<_> = headers
            .iter()
            .map(|h| (h.key_str().unwrap(), h.value()))
            .collect();
        assert_eq!(
            all,
            [
                ("a", Some(&b"1"[..])),
                ("b", None),
                ("a", Some(&b""[..])),
                ("a", Some(&b"3"[..]))
            ]
        );
        let a_values: Vec<_> = headers.get_all("a").map(|h| h.value_bytes()).collect();
        assert_eq!(
            a_values,
            [
                Some(Bytes::from_static(b"1")),
                Some(Bytes::new()),
                Some(Bytes::from_static(b"3"))
            ]
        );
        assert_eq!(headers.last("a").unwrap().value(), Some(&b"3"[..]));
        assert_eq!(headers.last("b").unwrap().value(), None);
        assert!(headers.last("c").is_none());
        assert_eq!(headers.len(), 4);
    }

    #[test]
    fn non_utf8_key_errors_on_access_only() {
        let mut out = Vec::new();
        write_varint(&mut out, 1);
        out.push(0xff);
        write_varint(&mut out, -1);
        let buf = Bytes::from(out);
        let header = Headers::new(&buf, 0, 1).iter().next().unwrap();
        assert_eq!(header.key(), &[0xff]);
        assert!(header.key_str().is_err());
    }

    #[test]
    fn malformed_headers_are_typed_errors() {
        let mut null_key = Vec::new();
        write_varint(&mut null_key, -1);
        assert!(matches!(
            read_header(&null_key, &mut 0),
            Err(HeaderError::Length {
                field: "header key length",
                length: -1,
                ..
            })
        ));
        let mut long_value = Vec::new();
        write_varint(&mut long_value, 0);
        write_varint(&mut long_value, 10);
        assert!(matches!(
            read_header(&long_value, &mut 0),
            Err(HeaderError::Length {
                field: "header value length",
                length: 10,
                available_bytes: 0
            })
        ));
        assert!(matches!(
            read_header(&[0x80], &mut 0),
            Err(HeaderError::Varint {
                error: VarintError::Truncated,
                ..
            })
        ));
    }
}
