<?php

declare(strict_types=1);

/** Amounts of money held as whole cents. */
final class Money
{
    /** "$12.34" for 1234 cents; a minus sign before the dollar sign for debts. */
    public static function format(int $cents): string
    {
        $sign = $cents < 0 ? '-' : '';
        $cents = abs($cents);
        return sprintf('%s$%d.%d', $sign, intdiv($cents, 100), $cents % 100);
    }
}
