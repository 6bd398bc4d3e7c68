// What reading a dataset can fail with, whichever reader read it (GeoPackage or PostGIS), and the words both
// readers and the parser answer a request's faults with: one module below the readers, so each reader stands
// beside the other and neither imports the other's errors.
import { badRequest } from "#shared/errors.ts";

/** A file that is no GeoPackage, a database that cannot be read, or tables that say something impossible. */
export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DatasetError";
  }
}

/** A query that ran past its time (the caller answers that the data source took too long). */
export class QueryTimeoutError extends Error {
  constructor() {
    super("The query took longer than its time allows.");
    this.name = "QueryTimeoutError";
  }
}

/**
 * The database's geometry engine met a feature geometry it cannot relate (an invalid polygon: GEOS's
 * TopologyException). The query is run again with the features' geometries repaired, as the JTS path repairs them.
 */
export class GeometryTopologyError extends Error {
  constructor() {
    super("a feature geometry could not be related");
    this.name = "GeometryTopologyError";
  }
}

/**
 * The database met a value the request's expression cannot take (PostgreSQL's class 22: a text cast to a number,
 * an integer out of range…): the caller answers that `where` (or `having`) cannot be evaluated on this data.
 */
export class DataExceptionError extends Error {
  /** What was wrong, when the database said it in terms the request can be told (ARGUMENT_FAULTS). */
  readonly fault: string | undefined;

  constructor(fault?: string) {
    super("the expression cannot be evaluated on this data");
    this.name = "DataExceptionError";
    this.fault = fault;
  }
}

/**
 * Arguments a function of the subset has no value for, as PostgreSQL refuses them (its data exceptions), in the
 * words every path answers with: the parser for a literal argument, SQLite's functions (sqlite-functions.ts) for a
 * computed one, and the PostgreSQL reader for the error the database raises, so both dialects answer one 400.
 */
export const ARGUMENT_FAULTS = {
  /** SQLSTATE 22003: a result past a double (overflow, or underflow to zero), an argument past an integer. */
  range: "A number in the expression is out of range",
  /** SQLSTATE 2201F. */
  power:
    "POWER has no real result for these arguments (zero to a negative power, or a negative number to a fractional one)",
  /** SQLSTATE 22025. */
  likeEscape: "A LIKE pattern cannot end with its ESCAPE character",
  /** SQLSTATE 22011. */
  substringLength: "SUBSTRING was given a negative length",
} as const;

/** The error every problem with a where/having text becomes: ArcGIS's envelope plus one specific reason. */
export function invalidParameter(parameter: string, reason: string) {
  return badRequest("Unable to complete operation.", [`'${parameter}' parameter is invalid`, reason]);
}
