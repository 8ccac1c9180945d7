<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;

final class MoneyTest extends TestCase
{
    public function testWholeDollars(): void
    {
        $this->assertSame('$12.10', Money::format(1210));
    }

    public function testDebts(): void
    {
        $this->assertSame('-$3.50', Money::format(-350));
    }
}
