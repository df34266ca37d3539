//! One partition's `records` bytes of a Fetch response, read the way `poll` reads them: batch
//! framing, CRC (on or off), every codec, control batches and, under `read_committed`, the
//! aborted-transaction filter.
//!
//! Input: a control byte (bit 0 read_committed, bit 1 check.crcs, bits 2-4 max records per
//! call - 1, bit 7 a full-range fetch offset), the fetch offset, up to three aborted
//! transactions, then the records bytes.
//!
//! Properties: no panic; live allocation stays under the cap (the 64 MiB decompressed-batch
//! limit, twice over while a buffer grows, plus room for the records); offsets returned are
//! strictly increasing and never before the fetch offset; the position never moves back; a
//! call returning nothing means the data is exhausted; after an error or the end, further calls
//! return nothing (the consumer stays usable).
#![no_main]

use bytes::Bytes;
use kafka_consumer::fuzzing::{Aborted, PartitionFetch};
use kafka_consumer::IsolationLevel;
use kafka_consumer_fuzz::{with_alloc_cap, Control};
use libfuzzer_sys::fuzz_target;

const ALLOC_CAP_BYTES: usize = 3 * 64 * 1024 * 1024;

fuzz_target!(|data: &[u8]| {
    let mut control = Control::new(data);
    let flags = control.u8();
    let isolation_level = if flags & 1 != 0 {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::ReadUncommitted
    };
    let check_crcs = flags & 2 != 0;
    let max_records = 1 + usize::from((flags >> 2) & 0x07);
    let fetch_offset = if flags & 0x80 != 0 {
        control.i64()
    } else {
        i64::from(control.u8())
    };
    let aborted: Vec<Aborted> = (0..control.u8() % 4)
        .map(|_| Aborted {
            producer_id: i64::from(control.u8() as i8),
            first_offset: i64::from(control.u16() as i16),
        })
        .collect();
    let records = Bytes::copy_from_slice(control.rest());

    with_alloc_cap(ALLOC_CAP_BYTES, || {
        let mut fetch = PartitionFetch::new(
            "fuzz",
            0,
            fetch_offset,
            records,
            &aborted,
            isolation_level,
            check_crcs,
        );
        let mut last_offset: Option<i64> = None;
        loop {
            let position_before = fetch.next_fetch_offset();
            match fetch.fetch_records(max_records) {
                Ok(batch) if batch.is_empty() => {
                    assert!(fetch.is_exhausted(), "an empty poll must mean the end");
                    break;
                }
                Ok(batch) => {
                    assert!(batch.len() <= max_records);
                    for record in &batch {
                        assert!(
                            record.offset >= fetch_offset,
                            "record before the fetch offset"
                        );
                        if let Some(last) = last_offset {
                            assert!(record.offset > last, "offsets not increasing");
                        }
                        last_offset = Some(record.offset);
                        assert_eq!(&*record.topic, "fuzz");
                    }
                    assert!(fetch.next_fetch_offset() >= position_before);
                }
                Err(error) => {
                    // Errors name what was wrong; rendering them must not panic.
                    let _ = error.to_string();
                    break;
                }
            }
        }
        // Usable afterwards: nothing more comes out, and asking again does not panic.
        let after = fetch.fetch_records(max_records);
        match after {
            Ok(batch) => assert!(batch.is_empty()),
            // A deferred error (records came first) is reported once.
            Err(_) => assert!(matches!(fetch.fetch_records(max_records), Ok(b) if b.is_empty())),
        }
    });
});
