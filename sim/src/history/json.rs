//! The history's JSON lines: serde_json's compact format, with bytes written from a
//! table (keys and payloads are most of a history's JSON).

/// serde_json's compact format, byte for byte, with each `u8` written from a table:
/// keys and payloads serialise as arrays of numbers and are most of a history's JSON.
pub(super) struct ByteTable;

/// The decimal digits of every `u8` and how many there are.
const U8_DECIMAL: [([u8; 3], u8); 256] = {
    let mut table = [([0u8; 3], 0u8); 256];
    let mut value = 0;
    while value < 256 {
        let (hundreds, tens, ones) = (value / 100, value / 10 % 10, value % 10);
        table[value] = if value >= 100 {
            (
                [b'0' + hundreds as u8, b'0' + tens as u8, b'0' + ones as u8],
                3,
            )
        } else if value >= 10 {
            ([b'0' + tens as u8, b'0' + ones as u8, 0], 2)
        } else {
            ([b'0' + ones as u8, 0, 0], 1)
        };
        value += 1;
    }
    table
};

impl serde_json::ser::Formatter for ByteTable {
    fn write_u8<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: u8,
    ) -> std::io::Result<()> {
        let (digits, count) = &U8_DECIMAL[usize::from(value)];
        writer.write_all(&digits[..usize::from(*count)])
    }
}
