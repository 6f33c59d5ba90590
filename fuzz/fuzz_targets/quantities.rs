//! Quantities from arbitrary text, as kruise-sim decodes built-in objects and the revision
//! hash reads templates: nothing panics; text Go would refuse gets one of Go's three
//! messages; the text Go writes back has the value that was read (but for decimal values
//! past `E`, whose exponent Go 1.36 drops), and writing it back again changes nothing.

#![no_main]

use std::cmp::Ordering;

use kruise_core::revision::quantity::{Quantity, go_written};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match go_written(text) {
        Err(err) => {
            let message = err.go_message();
            assert!(
                message.starts_with("quantities must match")
                    || message.starts_with("unable to parse"),
                "{message}"
            );
        }
        Ok(written) => {
            let read = Quantity::parse(text).expect("what is written back was read");
            if read.go_drops_exponent() {
                // As Go 1.36 (and kube-apiserver 1.36.2) does: `1000E` is written `1`.
                return;
            }
            let again = Quantity::parse(&written).expect("what is written back reads");
            assert_eq!(read.cmp_value(&again), Ordering::Equal, "{text:?} written {written:?}");
            assert_eq!(go_written(&written).as_deref(), Ok(written.as_str()), "{text:?}");
        }
    }
});
