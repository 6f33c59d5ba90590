//! The small hash functions Kubernetes and Kruise use to name and fingerprint objects.
//!
//! - [`fnv1_32`] is FNV-1 (multiply, then xor), which `HashControllerRevision` uses
//!   (`fnv.New32()` in Go).
//! - [`fnv1a_32`] is FNV-1a (xor, then multiply), which the kubelet's container hash and
//!   Kruise's volume-claim-template and env hashes use (`fnv.New32a()`).
//! - [`deep_hash_json`] hashes JSON bytes the way `hashutil.DeepHashObject` does when it is
//!   handed a `[]byte`: it hashes the text `([]uint8)[123 34 ...]` that its pretty printer
//!   writes for a byte slice, not the bytes themselves.
//! - [`safe_encode`] maps the decimal digits of a hash onto letters and digits that cannot
//!   spell words, as Kubernetes' `rand.SafeEncodeString` does.

const FNV_OFFSET_32: u32 = 0x811c_9dc5;
const FNV_PRIME_32: u32 = 0x0100_0193;

/// An incremental 32-bit FNV hasher, in either the FNV-1 or the FNV-1a variant.
#[derive(Clone, Copy, Debug)]
pub struct Fnv32 {
    state: u32,
    xor_first: bool,
}

impl Fnv32 {
    /// A fresh FNV-1 hasher (Go's `fnv.New32()`).
    pub fn fnv1() -> Self {
        Self { state: FNV_OFFSET_32, xor_first: false }
    }

    /// A fresh FNV-1a hasher (Go's `fnv.New32a()`).
    pub fn fnv1a() -> Self {
        Self { state: FNV_OFFSET_32, xor_first: true }
    }

    /// Feeds bytes into the hash.
    pub fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.xor_first {
                self.state ^= u32::from(byte);
                self.state = self.state.wrapping_mul(FNV_PRIME_32);
            } else {
                self.state = self.state.wrapping_mul(FNV_PRIME_32);
                self.state ^= u32::from(byte);
            }
        }
    }

    /// The hash of everything written so far.
    pub fn sum32(&self) -> u32 {
        self.state
    }
}

/// FNV-1 32-bit hash of `bytes`.
pub fn fnv1_32(bytes: &[u8]) -> u32 {
    let mut hasher = Fnv32::fnv1();
    hasher.write(bytes);
    hasher.sum32()
}

/// FNV-1a 32-bit hash of `bytes`.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    let mut hasher = Fnv32::fnv1a();
    hasher.write(bytes);
    hasher.sum32()
}

/// Writes the text Go's hash pretty printer produces for a `[]byte` holding `bytes`
/// (`([]uint8)[b0 b1 ...]`, each byte in decimal) into `hasher`.
pub fn write_byte_slice_dump(hasher: &mut Fnv32, bytes: &[u8]) {
    hasher.write(b"([]uint8)[");
    let mut digits = [0u8; 3];
    for (i, &byte) in bytes.iter().enumerate() {
        if i > 0 {
            hasher.write(b" ");
        }
        let mut n = byte;
        let mut len = 0;
        loop {
            digits[2 - len] = b'0' + n % 10;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        hasher.write(&digits[3 - len..]);
    }
    hasher.write(b"]");
}

/// FNV-1a hash of JSON bytes as `hashutil.DeepHashObject(fnv.New32a(), jsonBytes)` computes
/// it: over the pretty-printed byte slice rather than over the raw bytes.
pub fn deep_hash_json(json: &[u8]) -> u32 {
    let mut hasher = Fnv32::fnv1a();
    write_byte_slice_dump(&mut hasher, json);
    hasher.sum32()
}

/// Letters and digits that cannot form words (no vowels, no `0`, `1` or `3`).
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// Maps every character of `s` onto the 27-character alphabet `bcdfghjklmnpqrstvwxz2456789`
/// by its code point modulo 27.
pub fn safe_encode(s: &str) -> String {
    s.chars()
        .map(|c| {
            let index = (c as u32 % SAFE_ALPHABET.len() as u32) as usize;
            char::from(SAFE_ALPHABET[index])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_reference_vectors() {
        // Published FNV test vectors.
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
        assert_eq!(fnv1_32(b"foobar"), 0x31f0_b262);
    }

    #[test]
    fn kubelet_container_hash_vectors() {
        // The kubelet's own test expectations for `HashContainer`, which hashes a JSON
        // document through the byte-slice dump: the 1.31+ form hashes only name and image,
        // the older form the whole container.
        let picked = br#"{"image":"foo/image:v1","name":"test_container"}"#;
        assert_eq!(deep_hash_json(picked), 0x8e45_cbd0);
        let whole = br#"{"name":"test_container","image":"foo/image:v1","args":["/bin/sh","-c","echo abc"],"ports":[{"containerPort":8001}],"resources":{}}"#;
        assert_eq!(deep_hash_json(whole), 0x3c42_280f);
    }

    #[test]
    fn safe_encode_maps_digits() {
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert_eq!(safe_encode(""), "");
    }
}
