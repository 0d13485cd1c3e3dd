//! The element types batchlin computes in: `f32` and `f64`, each in its own precision.

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// Which element type a buffer holds. The raw (untyped) entry points take this so that
/// the C and Python layers can hand over whatever they were given and get a clear error
/// for the types batchlin does not compute in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F16,
    BF16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    C64,
    C128,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bool => "bool",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }
}

impl Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A real floating-point element type: `f32` or `f64`.
pub trait Real:
    Copy
    + Send
    + Sync
    + 'static
    + Default
    + Debug
    + Display
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + faer::traits::RealField
{
    const DTYPE: DType;
    const ZERO: Self;
    const ONE: Self;
    const TWO: Self;
    const HALF: Self;
    /// Machine epsilon (the gap between 1 and the next number).
    const EPSILON: Self;
    /// Smallest positive normal number.
    const MIN_POSITIVE: Self;
    const NAN: Self;

    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    fn is_finite(self) -> bool;
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn hypot(self, other: Self) -> Self;
    /// 2^e, exactly.
    fn exp2i(e: i32) -> Self;
    /// The exponent e with |self| in [2^(e-1), 2^e), for a finite nonzero self.
    fn exponent(self) -> i32;
    fn max(self, other: Self) -> Self;
    fn min(self, other: Self) -> Self;
}

macro_rules! impl_real {
    ($t:ty, $dt:expr, $bits:ty, $mant:expr, $bias:expr) => {
        impl Real for $t {
            const DTYPE: DType = $dt;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const TWO: Self = 2.0;
            const HALF: Self = 0.5;
            const EPSILON: Self = <$t>::EPSILON;
            const MIN_POSITIVE: Self = <$t>::MIN_POSITIVE;
            const NAN: Self = <$t>::NAN;

            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }
            #[inline(always)]
            fn hypot(self, other: Self) -> Self {
                <$t>::hypot(self, other)
            }
            #[inline]
            fn exp2i(e: i32) -> Self {
                // Built in two halves so that exponents down to the subnormal range work.
                let half = e / 2;
                let mk = |k: i32| <$t>::from_bits(((k + $bias) as $bits) << $mant);
                mk(half) * mk(e - half)
            }
            #[inline]
            fn exponent(self) -> i32 {
                let bits = <$t>::to_bits(<$t>::abs(self));
                let raw = (bits >> $mant) as i32;
                if raw == 0 {
                    // Subnormal: normalise first.
                    (self * Self::exp2i($mant + 1)).exponent() - ($mant + 1)
                } else {
                    raw - $bias + 1
                }
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                <$t>::min(self, other)
            }
        }
    };
}

impl_real!(f32, DType::F32, u32, 23, 127);
impl_real!(f64, DType::F64, u64, 52, 1023);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponent_brackets_value() {
        for &x in &[1.0f32, 0.75, 0.5, 3.0, 1e-30, 1e37, 1e-40, f32::MAX] {
            let e = x.exponent();
            let lo = f32::exp2i(e - 1) as f64;
            let hi = 2.0 * f32::exp2i(e - 1) as f64;
            assert!(lo <= x as f64 && (x as f64) < hi, "{x}: e={e}");
        }
        for &x in &[1.0f64, 0.75, 1e-300, 1e300, 5e-320] {
            let e = x.exponent();
            let lo = f64::exp2i(e - 1);
            assert!(lo <= x && x < 2.0 * lo, "{x}: e={e}");
        }
    }
}
