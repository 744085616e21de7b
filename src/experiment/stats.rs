//! Summary statistics of one metric in one condition: count, mean, sample standard deviation,
//! the 95% confidence interval of the mean (Student's t) and the range.

use serde::Serialize;

/// The summary of some values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for one value.
    pub sd: f64,
    /// Half the width of the 95% confidence interval of the mean; none for one value.
    pub ci95: Option<f64>,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// None for no values.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // Equal values have no spread (summing them may leave a rounding residue).
        let (mean, sd) = if min == max {
            (min, 0.0)
        } else {
            (mean, (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt())
        };
        let ci95 = (n > 1).then(|| t975(n - 1) * sd / (n as f64).sqrt());
        Some(Summary { n, mean, sd, ci95, min, max })
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom: exact to the printed digits
/// up to 30, then the Cornish-Fisher expansion (error below 1e-5 from 30 on).
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139, 2.200985,
        2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873,
        2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => {
            let z: f64 = 1.959_963_984_540_054;
            let d = df as f64;
            let g1 = (z.powi(3) + z) / 4.0;
            let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
            let g3 = (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / 384.0;
            z + g1 / d + g2 / d.powi(2) + g3 / d.powi(3)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_numbers() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample variance 32/7.
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert!((s.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // t(0.975, 7) = 2.364624; half width = 2.364624 * 2.13809 / sqrt(8) = 1.78750.
        assert!((s.ci95.unwrap() - 1.787_50).abs() < 1e-4, "{s:?}");
        assert_eq!((s.min, s.max), (2.0, 9.0));
        let same = Summary::of(&[1454.9; 20]).unwrap();
        assert_eq!((same.mean, same.sd, same.ci95), (1454.9, 0.0, Some(0.0)));
        let one = Summary::of(&[3.5]).unwrap();
        assert_eq!((one.n, one.mean, one.sd, one.ci95), (1, 3.5, 0.0, None));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t975(1) - 12.7062).abs() < 1e-4);
        assert!((t975(19) - 2.0930).abs() < 1e-4);
        assert!((t975(40) - 2.0211).abs() < 1e-4);
        assert!((t975(60) - 2.0003).abs() < 1e-4);
        assert!((t975(120) - 1.9799).abs() < 1e-4);
        assert!((t975(100_000) - 1.96).abs() < 1e-3);
    }
}
