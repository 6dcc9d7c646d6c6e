-- Aliases: other names people use for a metric ("NRR", "net dollar retention").
ALTER TABLE "metric" ADD COLUMN "aliases" TEXT[] DEFAULT ARRAY[]::TEXT[];
